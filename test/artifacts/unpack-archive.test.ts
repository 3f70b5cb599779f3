// SPEC §6 unpacking: a corpus of malicious archives built by the tests must each fail closed — nothing written
// outside the destination, the destination untouched, the staging directory gone — and good archives unpack.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { lstatSync, mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ArtifactError, type ArtifactCode, type UnsafeEntryReason } from '../../src/artifacts/artifact-error.js';
import { unpackArchive } from '../../src/artifacts/unpack-archive.js';
import type { UnpackLimits } from '../../src/artifacts/unpack-limits.js';
import { buildTar, buildTarGz, buildZip, type TarEntry, type ZipEntry } from './archive-builders.js';
import { snapshot, tempDir } from './fs-snapshot.js';

interface Ctx {
  base: string;
  dest: string;
  canary: string;
  outside: string;
  outsideTarget: string;
}

let ctx: Ctx;
let cleanup: () => void;

beforeEach(() => {
  const t = tempDir('ks-unpack-');
  cleanup = t.cleanup;
  const base = t.dir;
  ctx = { base, dest: join(base, 'dest'), canary: join(base, 'canary.txt'), outside: join(base, 'outside'), outsideTarget: join(base, 'outside', 'target.txt') };
  writeFileSync(ctx.canary, 'canary next to destDir\n');
  mkdirSync(ctx.outside);
  writeFileSync(ctx.outsideTarget, 'canary where links point\n');
  mkdirSync(ctx.dest);
  writeFileSync(join(ctx.dest, 'previous.txt'), 'the previous unpack\n');
  mkdirSync(join(base, 'archives'));
});
afterEach(() => cleanup());

function archive(name: string, bytes: Buffer): string {
  const p = join(ctx.base, 'archives', name);
  writeFileSync(p, bytes);
  return p;
}

async function expectFailClosed(
  path: string,
  code: ArtifactCode,
  reason?: UnsafeEntryReason,
  limits: Partial<UnpackLimits> = {},
): Promise<ArtifactError> {
  const before = snapshot(ctx.base);
  const err = await unpackArchive(path, ctx.dest, limits).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArtifactError);
  const ae = err as ArtifactError;
  expect({ code: ae.code, reason: ae.data.reason }).toEqual({ code, reason });
  // Nothing outside destDir changed, destDir is as it was, and no staging directory is left behind.
  expect(snapshot(ctx.base)).toEqual(before);
  expect(readFileSync(ctx.canary, 'utf8')).toBe('canary next to destDir\n');
  expect(readFileSync(ctx.outsideTarget, 'utf8')).toBe('canary where links point\n');
  return ae;
}

const tarCorpus: { name: string; entries: (c: Ctx) => TarEntry[]; code: ArtifactCode; reason?: UnsafeEntryReason; limits?: Partial<UnpackLimits> }[] = [
  { name: 'a ../ entry', entries: () => [{ name: 'ok.txt', data: 'x' }, { name: '../canary.txt', data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'parent-directory' },
  { name: 'a ../ hidden mid-path', entries: () => [{ name: 'a/b/../../../canary.txt', data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'parent-directory' },
  { name: 'an absolute path', entries: (c) => [{ name: c.canary, data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'absolute-path' },
  {
    name: 'a symlink pointing outside, then a file written through it',
    entries: (c) => [{ name: 'link', type: '2', linkname: c.outside }, { name: 'link/target.txt', data: 'pwned' }],
    code: 'KS_UNPACK_UNSAFE_ENTRY',
    reason: 'symlink',
  },
  {
    name: 'a relative symlink to a sibling of destDir',
    entries: () => [{ name: 'dir/', type: '5' }, { name: 'dir/link', type: '2', linkname: '../../canary.txt' }, { name: 'dir/link', data: 'pwned' }],
    code: 'KS_UNPACK_UNSAFE_ENTRY',
    reason: 'symlink',
  },
  {
    name: 'a hardlink pointing outside, then a file written through it',
    entries: (c) => [{ name: 'hard', type: '1', linkname: c.canary }, { name: 'hard', data: 'pwned' }],
    code: 'KS_UNPACK_UNSAFE_ENTRY',
    reason: 'hardlink',
  },
  { name: 'a character device', entries: () => [{ name: 'null', type: '3' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'character-device' },
  { name: 'a block device', entries: () => [{ name: 'sda', type: '4' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'block-device' },
  { name: 'a fifo', entries: () => [{ name: 'pipe', type: '6' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'fifo' },
  { name: 'an unknown entry type (sparse file)', entries: () => [{ name: 'sparse', type: 'S' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'unsupported-type' },
  { name: 'a backslash path', entries: () => [{ name: '..\\canary.txt', data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'backslash' },
  {
    name: 'a file that is also a directory',
    entries: () => [{ name: 'x', data: 'file' }, { name: 'x/y', data: 'under a file' }],
    code: 'KS_UNPACK_UNSAFE_ENTRY',
    reason: 'file-directory-conflict',
  },
  { name: 'the same file twice', entries: () => [{ name: 'x', data: '1' }, { name: './x', data: '2' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'duplicate' },
  { name: 'a very deep path', entries: () => [{ name: 'd/'.repeat(40) + 'f', data: 'deep' }], code: 'KS_UNPACK_TOO_DEEP', limits: { maxDepth: 32 } },
  {
    name: 'a path longer than maxPathLength (pax)',
    entries: () => [{ name: 'p'.repeat(200) + '/' + 'q'.repeat(200), data: 'long' }],
    code: 'KS_UNPACK_UNSAFE_ENTRY',
    reason: 'path-too-long',
    limits: { maxPathLength: 300 },
  },
  {
    name: 'too many entries',
    entries: () => Array.from({ length: 20 }, (_, i) => ({ name: `f${i}`, data: 'x' })),
    code: 'KS_UNPACK_TOO_LARGE',
    limits: { maxEntries: 10 },
  },
  {
    name: 'more bytes than maxTotalBytes',
    entries: () => [{ name: 'a', data: Buffer.alloc(3000) }, { name: 'b', data: Buffer.alloc(3000) }],
    code: 'KS_UNPACK_TOO_LARGE',
    limits: { maxTotalBytes: 4096 },
  },
];

describe('unpackArchive: malicious tar corpus fails closed', () => {
  for (const c of tarCorpus) {
    it(`.tar: ${c.name}`, async () => {
      await expectFailClosed(archive('evil.tar', buildTar(c.entries(ctx))), c.code, c.reason, c.limits);
    });
    it(`.tar.gz: ${c.name}`, async () => {
      await expectFailClosed(archive('evil.tar.gz', buildTarGz(c.entries(ctx))), c.code, c.reason, c.limits);
    });
  }

  it('names the entry and the reason', async () => {
    const err = await expectFailClosed(
      archive('evil.tar', buildTar([{ name: 'link', type: '2', linkname: ctx.outside }])),
      'KS_UNPACK_UNSAFE_ENTRY',
      'symlink',
    );
    expect(err.data.entry).toBe('link');
    expect(err.message).toContain('"link"');
    expect(err.message).toContain('symlink');
  });

  it('a gzip bomb (a small .tar.gz declaring and inflating far past the limit) fails without filling the disk', async () => {
    const bomb = buildTarGz([{ name: 'zeros', data: Buffer.alloc(16 * 1024 * 1024) }]);
    expect(bomb.length).toBeLessThan(64 * 1024);
    await expectFailClosed(archive('bomb.tgz', bomb), 'KS_UNPACK_TOO_LARGE', undefined, { maxTotalBytes: 1024 * 1024 });
  });

  it('a gzip stream that keeps inflating past the end of the tar is cut off', async () => {
    const tar = buildTar([{ name: 'small.txt', data: 'small' }]);
    const bomb = gzipSync(Buffer.concat([tar, Buffer.alloc(32 * 1024 * 1024)]));
    expect(bomb.length).toBeLessThan(64 * 1024);
    await expectFailClosed(archive('trailing.tgz', bomb), 'KS_UNPACK_TOO_LARGE', undefined, { maxTotalBytes: 64 * 1024, maxEntries: 10 });
  });

  it('corrupt and unknown archives are KS_UNPACK_FORMAT', async () => {
    const good = buildTar([{ name: 'a.txt', data: 'a'.repeat(2000) }, { name: 'b.txt', data: 'b' }]);
    await expectFailClosed(archive('random.bin', Buffer.from('this is not an archive at all, just text'.repeat(20))), 'KS_UNPACK_FORMAT');
    await expectFailClosed(archive('empty.tar', Buffer.alloc(0)), 'KS_UNPACK_FORMAT');
    await expectFailClosed(archive('badsum.tar', buildTar([{ name: 'a.txt', data: 'a' }, { name: 'b.txt', data: 'b', badChecksum: true }])), 'KS_UNPACK_FORMAT');
    await expectFailClosed(archive('truncated.tar', good.subarray(0, 1200)), 'KS_UNPACK_FORMAT');
    await expectFailClosed(archive('truncated.tgz', gzipSync(good).subarray(0, 40)), 'KS_UNPACK_FORMAT');
    await expectFailClosed(archive('text.gz', gzipSync(Buffer.from('a gzipped text file, not a tar\n'.repeat(40)))), 'KS_UNPACK_FORMAT');
    await expectFailClosed(archive('bzip.tar.bz2', Buffer.from('BZh91AY&SY' + 'x'.repeat(600))), 'KS_UNPACK_FORMAT');
  });
});

const zipCorpus: { name: string; entries: (c: Ctx) => ZipEntry[]; code: ArtifactCode; reason?: UnsafeEntryReason; limits?: Partial<UnpackLimits> }[] = [
  { name: 'a ../ entry', entries: () => [{ name: 'ok.txt', data: 'x' }, { name: '../canary.txt', data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'parent-directory' },
  { name: 'an absolute path', entries: (c) => [{ name: c.canary, data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'absolute-path' },
  { name: 'a drive-letter path', entries: () => [{ name: 'C:/Windows/evil', data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'absolute-path' },
  { name: 'a backslash ..\\ path', entries: () => [{ name: '..\\canary.txt', data: 'pwned' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'backslash' },
  {
    name: 'a symlink pointing outside, then a file written through it',
    entries: (c) => [{ name: 'link', data: c.outside, unixMode: 0o120777 }, { name: 'link/target.txt', data: 'pwned' }],
    code: 'KS_UNPACK_UNSAFE_ENTRY',
    reason: 'symlink',
  },
  { name: 'a character device', entries: () => [{ name: 'null', unixMode: 0o020666 }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'character-device' },
  { name: 'a fifo', entries: () => [{ name: 'pipe', unixMode: 0o010644 }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'fifo' },
  { name: 'the same file twice', entries: () => [{ name: 'x', data: '1' }, { name: 'x', data: '2' }], code: 'KS_UNPACK_UNSAFE_ENTRY', reason: 'duplicate' },
  { name: 'a very deep path', entries: () => [{ name: 'd/'.repeat(40) + 'f', data: 'deep' }], code: 'KS_UNPACK_TOO_DEEP', limits: { maxDepth: 32 } },
  {
    name: 'too many entries',
    entries: () => Array.from({ length: 20 }, (_, i) => ({ name: `f${i}`, data: 'x' })),
    code: 'KS_UNPACK_TOO_LARGE',
    limits: { maxEntries: 10 },
  },
];

describe('unpackArchive: malicious zip corpus fails closed', () => {
  for (const c of zipCorpus) {
    it(`.zip: ${c.name}`, async () => {
      await expectFailClosed(archive('evil.zip', buildZip(c.entries(ctx))), c.code, c.reason, c.limits);
    });
  }

  it('a zip bomb (honest sizes, far past the limit) fails without filling the disk', async () => {
    const zeros = Buffer.alloc(16 * 1024 * 1024);
    const bomb = buildZip([{ name: 'a', data: zeros }, { name: 'b', data: zeros }]);
    expect(bomb.length).toBeLessThan(64 * 1024);
    await expectFailClosed(archive('bomb.zip', bomb), 'KS_UNPACK_TOO_LARGE', undefined, { maxTotalBytes: 1024 * 1024 });
  });

  it('a zip bomb that lies about its sizes fails closed on the bytes, not the headers', async () => {
    const bomb = buildZip([{ name: 'a', data: Buffer.alloc(16 * 1024 * 1024), declaredSize: 100 }]);
    await expectFailClosed(archive('liar.zip', bomb), 'KS_UNPACK_FORMAT', undefined, { maxTotalBytes: 1024 * 1024 });
  });

  it('a central directory announcing too many entries is refused before reading them', async () => {
    await expectFailClosed(archive('count.zip', buildZip([{ name: 'a', data: 'a' }], { entryCount: 60_000 })), 'KS_UNPACK_TOO_LARGE');
  });

  it('a corrupt zip is KS_UNPACK_FORMAT', async () => {
    const good = buildZip([{ name: 'a.txt', data: 'hello' }, { name: 'b.txt', data: 'world' }]);
    await expectFailClosed(archive('cut.zip', good.subarray(0, good.length - 30)), 'KS_UNPACK_FORMAT');
    const badData = Buffer.from(good);
    badData.fill(0xff, 30 + 'a.txt'.length, 30 + 'a.txt'.length + 5); // garbage deflate stream
    await expectFailClosed(archive('baddata.zip', badData), 'KS_UNPACK_FORMAT');
  });
});

describe('unpackArchive: good archives', () => {
  const tree: TarEntry[] = [
    { name: './', type: '5' },
    { name: 'app/', type: '5', mode: 0o700 },
    { name: 'app/bin/run', data: '#!/bin/sh\necho hi\n', mode: 0o775 },
    { name: 'app/README', data: 'read me\n', mode: 0o666 },
    { name: 'app/lib/deep/x.txt', data: 'implicit parents\n' },
    { name: 'setuid', data: 'suid\n', mode: 0o4755 },
    { name: 'setgid', data: 'sgid\n', mode: 0o2644 },
    { name: 'sticky/', type: '5', mode: 0o1777 },
    { name: 'long/' + 'n'.repeat(150) + '.txt', data: 'pax path\n' },
  ];
  const zipTree: ZipEntry[] = [
    { name: 'app/', unixMode: 0o040700 },
    { name: 'app/bin/run', data: '#!/bin/sh\necho hi\n', unixMode: 0o100775 },
    { name: 'app/README', data: 'read me\n', unixMode: 0o100666, method: 0 },
    { name: 'app/lib/deep/x.txt', data: 'implicit parents\n' },
    { name: 'setuid', data: 'suid\n', unixMode: 0o104755 },
    { name: 'setgid', data: 'sgid\n', unixMode: 0o102644 },
    { name: 'sticky/', unixMode: 0o041777 },
    { name: 'long/' + 'n'.repeat(150) + '.txt', data: 'pax path\n' },
  ];

  function expectTree(): void {
    const mode = (p: string): string => (statSync(join(ctx.dest, p)).mode & 0o7777).toString(8);
    expect(existsSync(join(ctx.dest, 'previous.txt'))).toBe(false);
    expect(readFileSync(join(ctx.dest, 'app/bin/run'), 'utf8')).toBe('#!/bin/sh\necho hi\n');
    expect(readFileSync(join(ctx.dest, 'app/lib/deep/x.txt'), 'utf8')).toBe('implicit parents\n');
    expect(readFileSync(join(ctx.dest, 'long', 'n'.repeat(150) + '.txt'), 'utf8')).toBe('pax path\n');
    expect({
      run: mode('app/bin/run'),
      readme: mode('app/README'),
      setuid: mode('setuid'),
      setgid: mode('setgid'),
      app: mode('app'),
      sticky: mode('sticky'),
      root: mode(''),
    }).toEqual({ run: '755', readme: '644', setuid: '755', setgid: '644', app: '755', sticky: '755', root: '755' });
    // Only the destination exists next to the canaries: no staging or old directory is left behind.
    expect(readdirSync(ctx.base).sort()).toEqual(['archives', 'canary.txt', 'dest', 'outside']);
  }

  it('unpacks a .tar with nested directories, an executable bit, and stripped setuid/setgid/sticky', async () => {
    const r = await unpackArchive(archive('good.tar', buildTar(tree)), ctx.dest);
    expect(r).toMatchObject({ format: 'tar', entries: tree.length });
    expectTree();
  });

  it('unpacks a .tar.gz and a .tgz', async () => {
    expect((await unpackArchive(archive('good.tar.gz', buildTarGz(tree)), ctx.dest)).format).toBe('tar.gz');
    expectTree();
    expect((await unpackArchive(archive('good.tgz', buildTarGz(tree)), ctx.dest)).format).toBe('tar.gz');
    expectTree();
  });

  it('unpacks a .zip (deflated and stored entries)', async () => {
    const r = await unpackArchive(archive('good.zip', buildZip(zipTree)), ctx.dest);
    expect(r).toMatchObject({ format: 'zip', entries: zipTree.length });
    expectTree();
  });

  it('chooses the format by magic bytes, not by extension', async () => {
    expect((await unpackArchive(archive('misnamed.tar.gz', buildZip(zipTree)), ctx.dest)).format).toBe('zip');
    expectTree();
    expect((await unpackArchive(archive('misnamed.zip', buildTar(tree)), ctx.dest)).format).toBe('tar');
    expectTree();
  });

  it('creates destDir when it does not exist, and replaces a file standing in its place', async () => {
    const fresh = join(ctx.base, 'fresh');
    await unpackArchive(archive('good.tar', buildTar(tree)), fresh);
    expect(lstatSync(join(fresh, 'app/bin/run')).isFile()).toBe(true);
    writeFileSync(join(ctx.base, 'afile'), 'x');
    await unpackArchive(archive('good.zip', buildZip(zipTree)), join(ctx.base, 'afile'));
    expect(lstatSync(join(ctx.base, 'afile')).isDirectory()).toBe(true);
  });

  it('unpacks an archive of exactly maxTotalBytes and maxEntries', async () => {
    const entries = [{ name: 'a', data: Buffer.alloc(1000) }, { name: 'b', data: Buffer.alloc(24) }];
    const r = await unpackArchive(archive('exact.tar', buildTar(entries)), ctx.dest, { maxTotalBytes: 1024, maxEntries: 2 });
    expect(r).toEqual({ format: 'tar', entries: 2, bytes: 1024 });
  });
});
