// A deepening's pack (history-pack.ts): brought for the ancestry check alone, so its blobs past the limits are left
// out rather than the pack refused (a bomb pushed once must not stop every later commit's history check), and the
// pack rewritten so that it still indexes: ofs-deltas after a left-out entry point at their bases where they now are,
// deltas on a left-out blob go with it. Checked with `git index-pack` and `git cat-file`. A commit or tree past the
// limits is still refused. The agent going through it is test/e2e/pack-bomb.e2e.test.ts (its last commit).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneHistoryPack } from '../../src/git/history-pack.js';
import { GIT_ENV } from '../support/git-env.js';

const MiB = 1024 * 1024;
const limits = { maxObjectBytes: MiB, maxInflatedBytes: 4 * MiB, maxObjects: 100 };

function entryHeader(type: number, size: number): Buffer {
  const out = [(type << 4) | (size & 0x0f)];
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    out[out.length - 1]! |= 0x80;
    out.push(rest & 0x7f);
    rest = Math.floor(rest / 128);
  }
  return Buffer.from(out);
}

/** Git's ofs-delta distance encoding. */
function ofs(distance: number): Buffer {
  const bytes = [distance & 0x7f];
  for (let n = distance >>> 7; n > 0; n >>>= 7) bytes.unshift(0x80 | (--n & 0x7f));
  return Buffer.from(bytes);
}

const varint = (n: number) => {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    n = Math.floor(n / 128);
  } while (n > 0);
  return Buffer.from(out);
};

const oidOf = (type: string, content: Buffer) =>
  createHash('sha1').update(`${type} ${content.length}\0`).update(content).digest('hex');

/** Entries laid out one after the other: each a function of its own offset (for ofs-deltas), giving its bytes. */
function pack(entries: Array<(offset: number, offsets: number[]) => Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from('PACK\0\0\0\x02', 'latin1'), Buffer.alloc(4)];
  parts[1]!.writeUInt32BE(entries.length);
  const offsets: number[] = [];
  let at = 12;
  for (const e of entries) {
    offsets.push(at);
    const b = e(at, offsets);
    parts.push(b);
    at += b.length;
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

const whole = (type: number, content: Buffer) => () =>
  Buffer.concat([entryHeader(type, content.length), deflateSync(content)]);
/** A delta on entry `base` (by index): copy all of it, then insert `tail`. */
const ofsDelta = (base: number, baseLength: number, tail: string) => (offset: number, offsets: number[]) => {
  const insert = Buffer.from(tail);
  const instructions = Buffer.concat([
    varint(baseLength),
    varint(baseLength + insert.length),
    copyAll(baseLength),
    Buffer.from([insert.length]),
    insert,
  ]);
  return Buffer.concat([entryHeader(6, instructions.length), ofs(offset - offsets[base]!), deflateSync(instructions)]);
};
const refDelta = (baseOid: string, baseLength: number, tail: string) => () => {
  const insert = Buffer.from(tail);
  const instructions = Buffer.concat([
    varint(baseLength),
    varint(baseLength + insert.length),
    copyAll(baseLength),
    Buffer.from([insert.length]),
    insert,
  ]);
  return Buffer.concat([entryHeader(7, instructions.length), Buffer.from(baseOid, 'hex'), deflateSync(instructions)]);
};
/** Copy instructions for `n` bytes from offset 0, 64 KiB at a time. */
function copyAll(n: number): Buffer {
  const ops: number[] = [];
  for (let at = 0; at < n; at += 0x10000) {
    const size = Math.min(0x10000, n - at);
    let op = 0x80;
    const args: number[] = [];
    for (let b = 0; b < 4; b++) {
      const byte = (at >>> (8 * b)) & 0xff;
      if (byte) {
        op |= 1 << b;
        args.push(byte);
      }
    }
    for (let b = 0; b < 3 && size !== 0x10000; b++) {
      const byte = (size >>> (8 * b)) & 0xff;
      if (byte) {
        op |= 16 << b;
        args.push(byte);
      }
    }
    ops.push(op, ...args);
  }
  return Buffer.from(ops);
}

let root: string;
beforeAll(() => (root = mkdtempSync(join(tmpdir(), 'keystone-history-pack-'))));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Indexes `p` alone in a new repository (git index-pack, strict) and reads `oid` back. */
function indexAndRead(p: Buffer, oid: string): string {
  const repo = mkdtempSync(join(root, 'repo-'));
  execFileSync('git', ['init', '--quiet', '--bare', repo], { env: GIT_ENV });
  execFileSync('git', ['-C', repo, 'index-pack', '--stdin', '--strict'], { input: p, env: GIT_ENV });
  return execFileSync('git', ['-C', repo, 'cat-file', 'blob', oid], { env: GIT_ENV, encoding: 'latin1' });
}

describe('a history pack', () => {
  const small = Buffer.from('hello world, a small blob of some history\n');
  const bomb = Buffer.alloc(4 * MiB);

  it('leaves out a blob past the limits and the deltas on it; what is kept indexes, deltas after the gap included', async () => {
    const p = pack([
      whole(3, small), // kept
      whole(3, bomb), // left out: past the object limit
      ofsDelta(0, small.length, 'after the gap'), // kept: its base moved nearer
      ofsDelta(1, bomb.length, 'on the bomb'), // left out: its base is
      refDelta(oidOf('blob', bomb), bomb.length, 'named by id'), // left out: its base, by id, is
    ]);
    const r = await pruneHistoryPack(p, limits);
    expect(r.dropped).toBe(3);
    expect(r.cost.objects).toBe(2);
    expect(r.pack.length).toBeLessThan(p.length);
    const after = Buffer.concat([small, Buffer.from('after the gap')]);
    expect(indexAndRead(r.pack, oidOf('blob', after))).toBe(after.toString('latin1'));
    expect(indexAndRead(r.pack, oidOf('blob', small))).toBe(small.toString('latin1'));
  });

  it('leaves a pack within the limits as it came', async () => {
    const p = pack([whole(3, small), ofsDelta(0, small.length, '!')]);
    const r = await pruneHistoryPack(p, limits);
    expect(r.dropped).toBe(0);
    expect(r.pack).toBe(p);
  });

  it('leaves out blobs past the total, keeping what fits', async () => {
    const mib = Buffer.alloc(MiB - 100, 1);
    const p = pack([
      whole(3, mib),
      whole(3, Buffer.alloc(MiB - 100, 2)),
      whole(3, Buffer.alloc(MiB - 100, 3)),
      whole(3, Buffer.alloc(MiB - 100, 4)),
      whole(3, Buffer.alloc(MiB - 100, 5)),
      whole(3, small),
    ]);
    const r = await pruneHistoryPack(p, limits);
    expect(r.dropped).toBe(1);
    expect(r.cost.inflatedBytes).toBeLessThanOrEqual(limits.maxInflatedBytes);
    expect(indexAndRead(r.pack, oidOf('blob', small))).toBe(small.toString('latin1'));
  });

  it('refuses a tree or a commit past the limits (KS_GIT_PACK_TOO_LARGE): history needs them', async () => {
    await expect(pruneHistoryPack(pack([whole(2, Buffer.alloc(2 * MiB))]), limits)).rejects.toMatchObject({
      code: 'KS_GIT_PACK_TOO_LARGE',
      message: expect.stringContaining('a tree'),
    });
  });

  it('refuses a left-out blob whose stream inflates to another size than its header says (KS_GIT_THIN_PACK)', async () => {
    const lying = () => Buffer.concat([entryHeader(3, 4 * MiB), deflateSync(Buffer.alloc(5 * MiB))]);
    await expect(pruneHistoryPack(pack([lying]), limits)).rejects.toMatchObject({ code: 'KS_GIT_THIN_PACK' });
  });

  // A header may state up to 2^53 bytes and deflate expands ~1,000-fold: skipping used to inflate whatever the stream
  // held and compare sizes at its end, so a 128 MiB pack of zeros cost ~128 GiB of inflating at every deepening.
  it('refuses a left-out blob whose header states more than any pack may skip, without inflating it', async () => {
    const huge = () => Buffer.concat([entryHeader(3, 2 ** 40), deflateSync(Buffer.alloc(MiB))]);
    await expect(pruneHistoryPack(pack([whole(3, small), huge]), limits)).rejects.toMatchObject({
      code: 'KS_GIT_PACK_TOO_LARGE',
      message: expect.stringContaining('past the 4294967296'),
    });
  });

  it('abandons a left-out stream as soon as it passes its stated size, not at its end', async () => {
    // 64 MiB of zeros stated as 2 MiB, its checksum broken: read to its end, the stream would fail on the checksum.
    const data = deflateSync(Buffer.alloc(64 * MiB));
    data[data.length - 1]! ^= 0xff;
    const lying = () => Buffer.concat([entryHeader(3, 2 * MiB), data]);
    await expect(pruneHistoryPack(pack([lying]), limits)).rejects.toMatchObject({
      code: 'KS_GIT_THIN_PACK',
      message: expect.stringContaining(`inflates to more than the ${2 * MiB} bytes`),
    });
  });

  it('caps what the left-out entries of one pack inflate to together (KS_GIT_PACK_TOO_LARGE)', async () => {
    const p = pack([
      whole(3, Buffer.alloc(2 * MiB, 1)),
      whole(3, Buffer.alloc(2 * MiB, 2)),
      whole(3, Buffer.alloc(2 * MiB, 3)),
    ]);
    expect((await pruneHistoryPack(p, limits)).dropped).toBe(3);
    await expect(pruneHistoryPack(p, limits, 5 * MiB)).rejects.toMatchObject({
      code: 'KS_GIT_PACK_TOO_LARGE',
      message: expect.stringContaining(`${6 * MiB} bytes, past the ${5 * MiB}`),
    });
  });
});
