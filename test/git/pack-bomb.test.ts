// A pack bomb (issue 28, finding 3): a fetch's cap counts bytes on the wire, and zlib makes a 1 GiB blob of zeros out of
// a megabyte. What a fetched pack may inflate is bounded (pack-inflation.ts): each object's size is checked from its
// header before it is inflated, deltas by the size of what they produce, and the pack in all; past a limit the fetch
// is refused (KS_GIT_PACK_TOO_LARGE) and nothing of it stored. And a revision's reader checks a file's size from its
// object's header before reading it (git-object-size.ts): a file over the limit, or one SHA256SUMS does not list, is
// never inflated. The agent with the default limits is in test/e2e/pack-bomb.e2e.test.ts.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import git from 'isomorphic-git';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { GitObjectSizes } from '../../src/git/git-object-size.js';
import { GitRemoteCache } from '../../src/git/git-remote-cache.js';
import { GitTreeReader } from '../../src/source/git-tree-reader.js';
import { checkPackInflation, PACK_INFLATION_LIMITS } from '../../src/git/pack-inflation.js';
import { MAX_DOCUMENT_BYTES } from '../../src/source/repo-reader.js';
import { VerifiedReader, type VerifiedRevision } from '../../src/trust/verify-revision.js';
import { codedFailure } from '../support/coded-failure.js';
import { GIT_ENV } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

const MiB = 1024 * 1024;
const gitSync = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, ...args], { env: GIT_ENV, encoding: 'utf8', maxBuffer: 1 << 20 }).trim();

/** A pack entry's header: type and the size it states, 4 bits then 7 per byte. */
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

const varint = (n: number) => {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    n = Math.floor(n / 128);
  } while (n > 0);
  return Buffer.from(out);
};

/** A pack of `entries` (already encoded), with its count and checksum. */
function pack(entries: Buffer[]): Buffer {
  const head = Buffer.from('PACK\0\0\0\x02', 'latin1');
  const count = Buffer.alloc(4);
  count.writeUInt32BE(entries.length);
  const body = Buffer.concat([head, count, ...entries]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

const blob = (content: Buffer, stated = content.length) =>
  Buffer.concat([entryHeader(3, stated), deflateSync(content)]);

describe('what a fetched pack may inflate', () => {
  const limits = { maxObjectBytes: 2 * MiB, maxInflatedBytes: 4 * MiB, maxObjects: 10 };

  it('refuses an object whose header states more than an object may hold, before inflating it', () => {
    // The header says 1 GiB; the data behind it is a few bytes: it is refused on the header's word alone.
    const bomb = pack([blob(Buffer.from('hello'), 1024 * MiB)]);
    const e = (() => {
      try {
        checkPackInflation(bomb, limits);
      } catch (err) {
        return err as { code: string; message: string };
      }
      throw new Error('not refused');
    })();
    expect(e.code).toBe('KS_GIT_PACK_TOO_LARGE');
    expect(e.message).toContain('1073741824 bytes, over the limit of 2097152');
    // The defaults refuse it too.
    expect(() => checkPackInflation(bomb)).toThrow(expect.objectContaining({ code: 'KS_GIT_PACK_TOO_LARGE' }));
  });

  it('refuses a delta whose instructions produce more than an object may hold (a few bytes of delta, 1 GiB of object)', () => {
    const base = blob(Buffer.from('abc'));
    // Copy the 3-byte base again and again: the instructions state a 1 GiB result before any copy is made.
    const instructions = Buffer.concat([varint(3), varint(1024 * MiB), Buffer.from([0x90, 3])]);
    const delta = Buffer.concat([
      entryHeader(6, instructions.length),
      Buffer.from([base.length]),
      deflateSync(instructions),
    ]);
    expect(() => checkPackInflation(pack([base, delta]), limits)).toThrow(
      expect.objectContaining({
        code: 'KS_GIT_PACK_TOO_LARGE',
        message: expect.stringContaining('a delta whose object'),
      }),
    );
  });

  it('refuses a pack whose objects inflate past the total together, or that holds too many objects', () => {
    const mib = blob(Buffer.alloc(MiB));
    expect(checkPackInflation(pack([mib, mib, mib, mib]), limits)).toEqual({
      objects: 4,
      inflatedBytes: 4 * MiB,
      refDeltas: 0,
    });
    expect(() => checkPackInflation(pack([mib, mib, mib, mib, mib]), limits)).toThrow(
      expect.objectContaining({
        code: 'KS_GIT_PACK_TOO_LARGE',
        message: expect.stringContaining('more than 4194304 bytes'),
      }),
    );
    const tiny = blob(Buffer.from('x'));
    expect(() => checkPackInflation(pack(Array.from({ length: 11 }, () => tiny)), limits)).toThrow(
      expect.objectContaining({ code: 'KS_GIT_PACK_TOO_LARGE', message: expect.stringContaining('11 objects') }),
    );
  });

  it('a header that understates its object is caught at the size it stated, not inflated further', () => {
    expect(() => checkPackInflation(pack([blob(Buffer.alloc(MiB), 10)]), limits)).toThrow(
      expect.objectContaining({ code: 'KS_GIT_THIN_PACK' }),
    );
  });

  it('defaults well under the memory of a device with 1 GiB', () => {
    expect(PACK_INFLATION_LIMITS.maxObjectBytes).toBe(32 * MiB);
    expect(PACK_INFLATION_LIMITS.maxInflatedBytes).toBe(128 * MiB);
  });
});

describe('a fetch of a commit carrying a bomb (git http-backend)', () => {
  let root: string;
  let server: GitHttpServer;
  let ws: string;
  let bare: string;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'keystone-pack-bomb-'));
    server = await startGitHttpServer({ root: join(root, 'srv') });
    bare = server.createRepository('fleet', 'main');
    ws = join(root, 'ws');
    gitSync(root, 'init', '--quiet', '--initial-branch=main', ws);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  const cache = (limits = { maxObjectBytes: MiB, maxInflatedBytes: 3 * MiB, maxObjects: 1000 }) =>
    new GitRemoteCache({
      url: server.url('fleet'),
      branchRef: 'refs/heads/main',
      cacheDir: join(root, `cache-${Math.random().toString(36).slice(2)}`),
      headers: {},
      maxFetchBytes: 16 * MiB,
      fetchTimeoutMs: 30_000,
      maxPacks: 50,
      maxCacheBytes: 64 * MiB,
      redact: (t) => t,
      inflation: limits,
    });
  const commit = (files: Record<string, Buffer | string | null>) => {
    for (const [p, c] of Object.entries(files)) {
      if (c === null) gitSync(ws, 'rm', '--quiet', p);
      else writeFileSync(join(ws, p), c);
    }
    gitSync(ws, 'add', '-A');
    gitSync(ws, 'commit', '--quiet', '-m', 'commit');
    gitSync(ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
    return gitSync(ws, 'rev-parse', 'HEAD');
  };

  it('is refused with KS_GIT_PACK_TOO_LARGE and nothing of it is stored; the commit without it is fetched', async () => {
    commit({ 'plan.toml': 'x = 1\n', 'zeros.bin': Buffer.alloc(8 * MiB) });
    const c = cache();
    const e = await codedFailure(c.fetchTip());
    expect(e.code).toBe('KS_GIT_PACK_TOO_LARGE');
    expect(e.message).toContain(`inflates to ${8 * MiB} bytes, over the limit of ${MiB}`);
    expect(c.gitdir).toBeUndefined();
    expect(await c.usage()).toEqual({ packs: 0, bytes: 0 });

    // Many objects each under the limit: past the total.
    commit({
      'zeros.bin': null,
      ...Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`part-${i}.bin`, Buffer.alloc(MiB - 1024, i + 1)])),
    });
    expect((await codedFailure(c.fetchTip())).message).toContain('inflates to more than 3145728 bytes');

    const fixed = commit(Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`part-${i}.bin`, null])));
    expect(await c.fetchTip()).toBe(fixed);
    expect((await c.usage()).packs).toBe(1);
  });
});

describe('reading a revision never inflates a file it will not use', () => {
  let repo: string;
  let big: string;
  let small: string;
  beforeAll(() => {
    repo = mkdtempSync(join(tmpdir(), 'keystone-object-size-'));
    gitSync(repo, 'init', '--quiet', '--initial-branch=main');
    writeFileSync(join(repo, 'big.bin'), Buffer.alloc(64 * MiB));
    writeFileSync(join(repo, 'recipe.toml'), 'name = "a"\n');
    writeFileSync(join(repo, 'extra.toml'), 'name = "unsigned"\n');
    gitSync(repo, 'add', '-A');
    gitSync(repo, 'commit', '--quiet', '-m', 'one');
    big = gitSync(repo, 'rev-parse', 'HEAD:big.bin');
    small = gitSync(repo, 'rev-parse', 'HEAD:recipe.toml');
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));
  afterEach(() => vi.restoreAllMocks());

  it('reads sizes from headers: loose objects, whole packed objects and deltas, as git cat-file -s says', async () => {
    const sizes = new GitObjectSizes(join(repo, '.git'));
    expect(await sizes.sizeOf(big)).toBe(64 * MiB);
    expect(await sizes.sizeOf('0'.repeat(40))).toBeUndefined();
    // Packed, with deltas: versions of a text each a line apart.
    const text = (n: number) =>
      Array.from(
        { length: 4000 },
        (_, i) => `line ${i}${i === n ? ' changed' : ''} of a text long enough to delta\n`,
      ).join('');
    const blobs: string[] = [];
    for (let v = 0; v < 4; v++) {
      writeFileSync(join(repo, 'text.txt'), text(v * 100));
      gitSync(repo, 'add', '-A');
      gitSync(repo, 'commit', '--quiet', '-m', `text ${v}`);
      blobs.push(gitSync(repo, 'rev-parse', 'HEAD:text.txt'));
    }
    gitSync(repo, 'repack', '-a', '-d', '-q');
    const packed = new GitObjectSizes(join(repo, '.git'));
    const packDir = join(repo, '.git', 'objects', 'pack');
    const idx = readdirSync(packDir).find((f) => f.endsWith('.idx'))!;
    // At least one version is stored as a delta (verify-pack names its base).
    expect(gitSync(repo, 'verify-pack', '-v', join(packDir, idx))).toMatch(
      /^[0-9a-f]{40} blob +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/m,
    );
    for (const oid of [
      ...blobs,
      big,
      small,
      gitSync(repo, 'rev-parse', 'HEAD'),
      gitSync(repo, 'rev-parse', 'HEAD^{tree}'),
    ])
      expect(await packed.sizeOf(oid)).toBe(Number(gitSync(repo, 'cat-file', '-s', oid)));
  });

  it('a file over the limit is refused from its size alone: its blob is never read', async () => {
    const reader = new GitTreeReader(
      { dir: repo, gitdir: join(repo, '.git') },
      gitSync(repo, 'rev-parse', 'HEAD'),
      'main',
    );
    const readBlob = vi.spyOn(git, 'readBlob');
    expect(await reader.readFile('big.bin', MAX_DOCUMENT_BYTES)).toEqual({
      ok: false,
      code: 'KS_FILE_TOO_LARGE',
      message: expect.stringContaining(`big.bin is ${64 * MiB} bytes`),
    });
    expect(readBlob.mock.calls.filter(([a]) => a.oid === big)).toEqual([]);
    // The spy sees what is read: a file under the limit is.
    expect((await reader.readFile('recipe.toml', MAX_DOCUMENT_BYTES)).ok).toBe(true);
    expect(readBlob.mock.calls.map(([a]) => a.oid)).toEqual([small]);
  });

  it('a file SHA256SUMS does not list is found to be there, never read, and refused (KS_FILE_NOT_SIGNED)', async () => {
    const reader = new GitTreeReader(
      { dir: repo, gitdir: join(repo, '.git') },
      gitSync(repo, 'rev-parse', 'HEAD'),
      'main',
    );
    const verified = { files: new Map([['recipe.toml', Buffer.from('name = "a"\n')]]) } as unknown as VerifiedRevision;
    const signedOnly = new VerifiedReader(reader, verified);
    const readBlob = vi.spyOn(git, 'readBlob');
    for (const path of ['big.bin', 'extra.toml']) {
      const e = await signedOnly.readFile(path, 2 * 1024 * MiB).then(
        () => undefined,
        (err: { code: string }) => err,
      );
      expect(e?.code, path).toBe('KS_FILE_NOT_SIGNED');
    }
    expect(readBlob).not.toHaveBeenCalled();
    expect(await signedOnly.readFile('missing.toml', MAX_DOCUMENT_BYTES)).toMatchObject({
      ok: false,
      code: 'KS_FILE_NOT_FOUND',
    });
    // A listed file comes from what the verification read, once.
    expect(await signedOnly.readFile('recipe.toml', MAX_DOCUMENT_BYTES)).toMatchObject({ ok: true });
  });
});
