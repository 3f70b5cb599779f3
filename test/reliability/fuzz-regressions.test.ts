// Every input the fuzzers found breaking a parser, kept under reliability/fuzz/corpus/<target>/crashes/ and replayed
// here through the target's oracle: each failed before its fix (see the comments by target). Open findings in code
// this suite does not own live in corpus/<target>/open/ instead and are not replayed here.
import { readdirSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCrashes, CORPUS_DIR } from '../../reliability/fuzz/corpus.js';
import { checkOnce } from '../../reliability/fuzz/run-fuzz.js';
import { TARGETS } from '../../reliability/fuzz/targets.js';
import { scratch as tarScratch } from '../../reliability/fuzz/targets/tar-unpack.js';
import { scratch as zipScratch } from '../../reliability/fuzz/targets/zip-unpack.js';

/**
 * What each kept crash must come to now, where more than "within the contract":
 * - zip-unpack: garbage deflate data whose inflate error yauzl emitted before the entry's reader started (a slow
 *   disk creating the file) was swallowed, and the unpack waited forever (fixed in src/artifacts/unpack-zip.ts).
 * - zip-unpack: a zip64 end-of-central-directory locator pointing past 2^53: yauzl's file reader handed the offset to
 *   fs.read, which threw inside a callback, an exception no caller could catch: it took the process down (fixed by
 *   src/artifacts/open-zip.ts, a reader that refuses ranges outside the file: KS_UNPACK_FORMAT).
 * - sha256sums: a line whose path is `./` alone was accepted as the empty path; `././x` was read as `./x`, which
 *   formatSha256Sums writes back as one that reads as `x` (not the same sums); a NUL was accepted in a path (fixed in
 *   src/trust/sha256sums.ts: every leading `./` removed, the empty path and control characters KS_SUMS_MALFORMED).
 * - fleet-toml: a last rollout wave whose percent is a table (`percent = {}`) threw TypeError ("Cannot convert object
 *   to primitive value") out of parseFleet while its message was written (fixed in src/core/rollout.ts).
 * - api-request: a path with a malformed %-escape (`/v1/components/%zz`) was refused by the router (fastify's, then)
 *   before our hooks with its own body (`{"code":"FST_ERR_BAD_URL"}`), not our error shape (fixed in
 *   src/api/build-server.ts: a path that does not decode is 400 KS_BAD_PATH).
 * - thin-pack: bytes between the last object and the trailer (a count below the objects sent, or junk) were kept in
 *   the completed pack, which git refuses as "junk at the end" (fixed in src/git/thin-pack.ts: refused).
 */
const EXPECTED: Record<string, 'accepted' | 'refused'> = {
  'junk-after-last-object.pack': 'refused',
  'count-below-objects.pack': 'refused',
  'count-zero-bad-trailer-186eac6b.pack': 'refused',
  'last-wave-percent-table.toml': 'refused',
  'zip64-locator-past-2-53.zip': 'refused',
  'dot-slash-alone.SHA256SUMS': 'refused',
  'dot-slash-twice.SHA256SUMS': 'accepted',
  'dot-slash-twice-and-nul.SHA256SUMS': 'refused',
  'bad-percent-escape.http': 'refused',
  'bad-percent-escape-bc133a80.http': 'refused',
};

describe('fuzz regressions: every kept crash', () => {
  const withCrashes = TARGETS.filter((t) => loadCrashes(t.name).length > 0);

  it('there are crashes kept, and each names a target', () => {
    expect(withCrashes.length).toBeGreaterThan(0);
    const folders = readdirSync(CORPUS_DIR, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    for (const f of folders)
      expect(
        TARGETS.map((t) => t.name),
        `corpus folder ${f}`,
      ).toContain(f);
  });

  for (const target of withCrashes)
    describe(target.name, () => {
      for (const crash of loadCrashes(target.name))
        it(`${basename(crash.path)}: within the contract, under 1 s`, async () => {
          await target.setup?.();
          try {
            const { outcome } = await checkOnce(target, crash.bytes);
            const expected = EXPECTED[basename(crash.path)];
            if (expected) expect(outcome).toBe(expected);
          } finally {
            await target.teardown?.();
          }
        });
    });

  it('every kept archive crash settles on a slow disk too', async () => {
    for (const [name, scratch] of [
      ['tar-unpack', tarScratch],
      ['zip-unpack', zipScratch],
    ] as const) {
      await scratch.setup();
      try {
        for (const crash of loadCrashes(name))
          await checkOnce(
            { ...TARGETS.find((t) => t.name === name)!, check: (i) => scratch.check(i, true) },
            crash.bytes,
          );
      } finally {
        await scratch.teardown();
      }
    }
  });
});
