// Completing a thin pack a Git host sent (src/git/thin-pack.ts completeThinPack): entries, zlib streams, ofs- and
// ref-deltas against objects outside the pack. Seeds: a pack from `git pack-objects --thin` and the hand-built one of
// test/git/thin-pack.fuzz.test.ts; half the mutations get a right trailing checksum again, to reach the deltas.
import { createHash } from 'node:crypto';
import { OperationError } from '../../../src/core/errors.js';
import { completeThinPack } from '../../../src/git/thin-pack.js';
import { holds, refusedWith, type FuzzTarget } from '../fuzz-target.js';
import { readBase } from '../git-bases.js';
import { loadCorpus } from '../corpus.js';
import { mutatedSeeds } from '../mutate.js';

const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest();
const withChecksum = (body: Uint8Array) => new Uint8Array(Buffer.concat([body, sha1(body)]));

/** Mutations of the seed packs' bodies, with the trailer recomputed. */
const bodies = loadCorpus('thin-pack').map((f) => f.bytes.subarray(0, Math.max(12, f.bytes.length - 20)));
const rechecksummed = mutatedSeeds(bodies, ['\u0078\u009c', '\u0000\u0000\u0000\u0003', '\u0090', '\u0080'], 4096).map(
  withChecksum,
);

export const thinPack: FuzzTarget = {
  name: 'thin-pack',
  parses: 'completeThinPack (src/git/thin-pack.ts): a thin pack from a Git host',
  maxBytes: 8 * 1024,
  testRuns: 1_500,
  dictionary: ['PACK', '\u0000\u0000\u0000\u0002', '\u0078\u009c', '\u0090', '\u00ff\u00ff\u00ff\u00ff'],
  structured: rechecksummed,
  async check(input) {
    let out;
    try {
      out = Buffer.from(await completeThinPack(input, readBase));
    } catch (e) {
      return refusedWith(e, (x) => x instanceof OperationError && x.code === 'KS_GIT_THIN_PACK');
    }
    // Unchanged when no base came from outside: its trailer is then the caller's to check (checkedPack), as it was.
    if (out.equals(Buffer.from(input))) return 'accepted';
    holds(out.subarray(0, 4).toString('latin1') === 'PACK', 'the completed pack does not start with PACK');
    holds(
      sha1(out.subarray(0, out.length - 20)).equals(out.subarray(out.length - 20)),
      'the completed pack has a bad checksum',
    );
    // Complete now: a second pass finds nothing to add and parses it to the end.
    holds(Buffer.from(await completeThinPack(out, readBase)).equals(out), 'the completed pack is not complete');
    return 'accepted';
  },
};
