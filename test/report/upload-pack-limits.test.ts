// The walk of an upload-pack answer before the Git library holds it (upload-pack-limits.ts): objects and inflated
// bytes, deltas charged for what they make, headers that lie refused. Packs made by git itself, and one by hand: a
// 107-byte delta that makes 6.4 MB (git index-pack checks that it is a real pack).
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { isStatusDeliveryError } from '../../src/report/commit-status.js';
import { uploadPackCost } from '../../src/report/upload-pack-limits.js';

const AMPLE = { maxInflatedBytes: 1 << 30, maxObjects: 1_000_000 };

function pktLine(payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0')), payload]);
}

/** An upload-pack answer as git sends it with side-band-64k: NAK, the pack on band 1 in pieces, progress on band 2. */
function sideBand(pack: Buffer): Buffer {
  const parts = [pktLine(Buffer.from('NAK\n')), pktLine(Buffer.from('\x02Counting objects: 2\n'))];
  for (let i = 0; i < pack.length; i += 1000)
    parts.push(pktLine(Buffer.concat([Buffer.from([1]), pack.subarray(i, i + 1000)])));
  return Buffer.concat([...parts, Buffer.from('0000')]);
}

function objectHeader(type: number, size: number): Buffer {
  const out = [(type << 4) | (size & 15)];
  for (size = Math.floor(size / 16); size > 0; size = Math.floor(size / 128)) {
    out[out.length - 1]! |= 0x80;
    out.push(size & 0x7f);
  }
  return Buffer.from(out);
}

const varint = (n: number) => {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | (n >= 128 ? 0x80 : 0));
    n = Math.floor(n / 128);
  } while (n > 0);
  return Buffer.from(out);
};

/** An ofs-delta's distance back to its base, as git writes it (big-endian groups of 7 bits, each but the last minus 1). */
function ofsDistance(n: number): Buffer {
  const out = [n & 0x7f];
  for (n = Math.floor(n / 128); n > 0; n = Math.floor(n / 128)) {
    n -= 1;
    out.unshift(0x80 | (n & 0x7f));
  }
  return Buffer.from(out);
}

/** A pack of `entries` (header, data inflated), with its checksum. */
function pack(entries: { type: number; data: Buffer; stated?: number; ofs?: number }[]): Buffer {
  const head = Buffer.alloc(12);
  head.write('PACK', 0, 'latin1');
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(entries.length, 8);
  const parts: Buffer[] = [head];
  let offset = 12;
  const offsets: number[] = [];
  for (const e of entries) {
    offsets.push(offset);
    const ofs = e.ofs === undefined ? Buffer.alloc(0) : ofsDistance(offset - offsets[e.ofs]!);
    const part = Buffer.concat([objectHeader(e.type, e.stated ?? e.data.length), ofs, deflateSync(e.data)]);
    parts.push(part);
    offset += part.length;
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** A blob of 64 KiB and a delta that copies it `copies` times (one byte per copy of 0x10000 bytes from offset 0). */
function deltaBomb(copies: number): { pack: Buffer; made: number } {
  const base = randomBytes(0x10000);
  const made = copies * 0x10000;
  const delta = Buffer.concat([varint(base.length), varint(made), Buffer.alloc(copies, 0x80)]);
  return {
    pack: pack([
      { type: 3, data: base },
      { type: 6, data: delta, ofs: 0 },
    ]),
    made,
  };
}

describe('uploadPackCost', () => {
  it('counts what git sends: each object at its inflated size, through the side band or without it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keystone-pack-'));
    try {
      execFileSync('git', ['init', '--quiet', '--bare', dir]);
      const blobs = [randomBytes(5000), Buffer.alloc(300_000)].map((data) => {
        writeFileSync(join(dir, 'x'), data);
        return execFileSync('git', ['--git-dir', dir, 'hash-object', '-w', join(dir, 'x')], {
          encoding: 'utf8',
        }).trim();
      });
      const packed = execFileSync('git', ['--git-dir', dir, 'pack-objects', '--stdout'], {
        input: `${blobs.join('\n')}\n`,
      });
      expect(uploadPackCost(Buffer.concat([pktLine(Buffer.from('NAK\n')), packed]), AMPLE, 'w')).toEqual({
        objects: 2,
        inflatedBytes: 305_000,
      });
      expect(uploadPackCost(sideBand(packed), AMPLE, 'w')).toEqual({ objects: 2, inflatedBytes: 305_000 });
      // 300 kB of zeros are 300 bytes on the wire, and over a limit of 200 kB.
      expect(packed.length).toBeLessThan(7_000);
      const refused = (() => {
        try {
          return uploadPackCost(sideBand(packed), { ...AMPLE, maxInflatedBytes: 200_000 }, 'fetching x');
        } catch (e) {
          return e;
        }
      })();
      expect(isStatusDeliveryError(refused, 'KS_STATUS_NOTES_TOO_LARGE'), String(refused)).toBe(true);
      expect(String(refused)).toContain(
        'fetching x: the server sent a pack of objects that inflate to more than 200000 bytes',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('charges a delta for the object it makes: a 107-byte delta of a 64 KiB blob that makes 6.4 MB is over a limit of 4 MiB', () => {
    const { pack: bomb, made } = deltaBomb(100);
    // A real pack: git resolves the delta to a blob of that size.
    const dir = mkdtempSync(join(tmpdir(), 'keystone-pack-'));
    try {
      execFileSync('git', ['init', '--quiet', '--bare', dir]);
      execFileSync('git', ['--git-dir', dir, 'index-pack', '--stdin'], { input: bomb });
      const listed = execFileSync(
        'git',
        ['--git-dir', dir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectsize)'],
        { encoding: 'utf8' },
      );
      expect(
        listed
          .trim()
          .split('\n')
          .map(Number)
          .sort((a, b) => a - b),
      ).toEqual([0x10000, made]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(bomb.length).toBeLessThan(70_000);
    expect(uploadPackCost(sideBand(bomb), AMPLE, 'w')).toEqual({ objects: 2, inflatedBytes: 0x10000 + made });
    expect(() => uploadPackCost(sideBand(bomb), { ...AMPLE, maxInflatedBytes: 4 << 20 }, 'w')).toThrow(
      /inflate to more than 4194304 bytes/,
    );
  });

  it('refuses more objects than the limit before inflating any, and a header that states less than the object holds', () => {
    const many = pack(Array.from({ length: 50 }, (_, i) => ({ type: 3, data: Buffer.from(`note ${i}\n`) })));
    expect(uploadPackCost(sideBand(many), { ...AMPLE, maxObjects: 50 }, 'w').objects).toBe(50);
    expect(() => uploadPackCost(sideBand(many), { ...AMPLE, maxObjects: 49 }, 'w')).toThrow(
      /50 objects \(the limit is 49\)/,
    );
    const lying = pack([{ type: 3, data: Buffer.alloc(1 << 20), stated: 10 }]);
    const err = (() => {
      try {
        return uploadPackCost(sideBand(lying), AMPLE, 'w');
      } catch (e) {
        return e;
      }
    })();
    expect(isStatusDeliveryError(err, 'KS_STATUS_SERVER_ERROR'), String(err)).toBe(true);
    expect(String(err)).toMatch(/object at \d+ (does not inflate|inflates to \d+ bytes, not 10)/);
  });
});
