// Unpacking .zip artifacts (src/artifacts/unpack-zip.ts through unpackArchive, yauzl underneath). Seeds are archives
// made by Info-ZIP `zip` and Python's zipfile, and hostile ones built by hand.
import fc from 'fast-check';
import { buildZip, type ZipEntry } from '../../../test/artifacts/archive-builders.js';
import { ArchiveScratch } from '../archive-contract.js';
import type { FuzzTarget } from '../fuzz-target.js';

/** Exported for the regression tests, which unpack every kept crash onto the slow disk too. */
export const scratch = new ArchiveScratch();

const name = fc.oneof(
  fc.constantFrom('a', 'a/b', 'dir/', './', '../x', '/abs', 'C:/x', 'a\\b', 'x'.repeat(120), 'a/b/c/d/e/f/g/h', 'ü'),
  fc.string({ minLength: 1, maxLength: 16 }),
);
const entry: fc.Arbitrary<ZipEntry> = fc.record(
  {
    name,
    data: fc.oneof(fc.string({ maxLength: 40 }), fc.uint8Array({ maxLength: 600 })),
    method: fc.constantFrom(0 as const, 8 as const),
    unixMode: fc.constantFrom(0o100644, 0o100755, 0o040755, 0o120777, 0o020644, 0o010644, 0o140644, 0o170000, 0o104755),
    declaredSize: fc.oneof(fc.nat({ max: 2000 }), fc.constant(0xffffffff)),
  },
  { requiredKeys: ['name'] },
);
const archive = fc
  .tuple(fc.array(entry, { maxLength: 6 }), fc.option(fc.nat({ max: 65_535 }), { nil: undefined }))
  .map(([entries, entryCount]) => new Uint8Array(buildZip(entries, entryCount === undefined ? {} : { entryCount })));

export const zipUnpack: FuzzTarget = {
  name: 'zip-unpack',
  parses: 'unpackArchive on .zip (src/artifacts/unpack-zip.ts, unpack-archive.ts, staging-tree.ts)',
  maxBytes: 16 * 1024,
  testRuns: 300,
  // 100,000 take 10–15 minutes on two cores (scrypt / the disk): the default keeps `npm run fuzz` near half an hour.
  defaultRuns: 40_000,
  dictionary: [
    'PK\u0003\u0004',
    'PK\u0001\u0002',
    'PK\u0005\u0006',
    'PK\u0006\u0006',
    'PK\u0006\u0007',
    '\u00ff\u00ff\u00ff\u00ff',
    '\u0001\u0000',
  ],
  structured: archive,
  setup: () => scratch.setup(),
  teardown: () => scratch.teardown(),
  check: (input) => scratch.check(input),
};
