// A protocol v1 ref advertisement (`GET info/refs?service=git-upload-pack`) from a Git host: completed with HEAD
// (src/git/git-head-advertisement.ts withAdvertisedHead) and read for the capabilities a fetch may ask for
// (src/git/thin-pack-http.ts requestable). Both must return, never throw. Seeds captured from `git http-backend`.
import { withAdvertisedHead } from '../../../src/git/git-head-advertisement.js';
import { requestable } from '../../../src/git/thin-pack-http.js';
import { holds, type FuzzTarget } from '../fuzz-target.js';
import { refLines } from '../pkt-line.js';

const BRANCH = 'refs/heads/main';

export const gitRefAdvertisement: FuzzTarget = {
  name: 'git-ref-advertisement',
  parses: 'withAdvertisedHead, requestable (src/git/git-head-advertisement.ts, thin-pack-http.ts): info/refs',
  maxBytes: 8 * 1024,
  testRuns: 2_000,
  dictionary: [
    '0000',
    '# service=git-upload-pack\n',
    ' HEAD',
    ' refs/heads/main',
    '\0',
    'thin-pack',
    'side-band-64k',
    'no-progress',
    'symref=HEAD:',
  ],
  structured: refLines,
  check(input) {
    const out = Buffer.from(withAdvertisedHead(input, BRANCH));
    const before = Buffer.from(input);
    if (!out.equals(before)) {
      // Only ever one line added: `<oid> HEAD\n`, before the final flush, and the rest as it was.
      holds(
        out.length > before.length && out.subarray(out.length - 4).toString() === '0000',
        'the completed advertisement does not end in a flush',
      );
      const added = out.subarray(before.length - 4, out.length - 4).toString('latin1');
      holds(
        /^[0-9a-f]{4}([0-9a-f]{40}|[0-9a-f]{64}) HEAD\n$/.test(added),
        `added ${JSON.stringify(added)}, not a HEAD line`,
      );
      holds(
        out.subarray(0, before.length - 4).equals(before.subarray(0, before.length - 4)),
        'the advertisement was changed, not completed',
      );
    }
    const caps = requestable(input);
    holds(
      caps.every((c) => c === 'thin-pack' || c === 'no-progress'),
      `asks for ${caps.join(' ')}`,
    );
    return out.equals(before) ? 'refused' : 'accepted';
  },
};
