// Unpacking .tar and .tar.gz artifacts (src/artifacts/unpack-tar.ts through unpackArchive): bytes from a download,
// untrusted even after their digest matched. Seeds are archives made by GNU tar and hostile ones built by hand.
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { buildTar, type TarEntry } from '../../../test/artifacts/archive-builders.js';
import { ArchiveScratch } from '../archive-contract.js';
import type { FuzzTarget } from '../fuzz-target.js';

/** Exported for the regression tests, which unpack every kept crash onto the slow disk too. */
export const scratch = new ArchiveScratch();

const name = fc.oneof(
  fc.constantFrom(
    'a',
    'a/b',
    'dir/',
    './',
    '.',
    '../x',
    '/abs',
    'a/../b',
    'a\\b',
    'x'.repeat(120),
    'a/b/c/d/e/f/g/h',
    'ü',
    'a\0b',
  ),
  fc.string({ minLength: 1, maxLength: 16 }),
);
const entry: fc.Arbitrary<TarEntry> = fc.record(
  {
    name,
    type: fc.constantFrom('0', '0', '0', '5', '1', '2', '3', '6', 'x', 'g', 'L', 'K', '7', 'Z', '\0'),
    data: fc.oneof(fc.string({ maxLength: 40 }), fc.uint8Array({ maxLength: 600 })),
    mode: fc.constantFrom(0o644, 0o755, 0o4755, 0o1777, 0o7777),
    linkname: fc.constantFrom('a', '../etc/passwd', '/etc/passwd'),
    size: fc.oneof(fc.nat({ max: 2000 }), fc.constant(2 ** 33)),
    badChecksum: fc.boolean(),
  },
  { requiredKeys: ['name', 'type'] },
);
const archive = fc
  .tuple(fc.array(entry, { maxLength: 6 }), fc.boolean(), fc.boolean())
  .map(([entries, trailer, gz]) => {
    const tar = buildTar(entries, { trailer });
    return new Uint8Array(gz ? gzipSync(tar) : tar);
  });

export const tarUnpack: FuzzTarget = {
  name: 'tar-unpack',
  parses: 'unpackArchive on .tar / .tar.gz (src/artifacts/unpack-tar.ts, unpack-archive.ts, staging-tree.ts)',
  maxBytes: 24 * 1024,
  testRuns: 300,
  // 100,000 take 10–15 minutes on two cores (scrypt / the disk): the default keeps `npm run fuzz` near half an hour.
  defaultRuns: 40_000,
  dictionary: ['ustar\u000000', 'ustar  \u0000', '././@LongLink', 'PaxHeader', 'path=', 'size=', '../', '\u001f\u008b'],
  structured: archive,
  setup: () => scratch.setup(),
  teardown: () => scratch.teardown(),
  check: (input) => scratch.check(input),
};
