// SHA256SUMS, the signed list of a revision's files (src/trust/sha256sums.ts): strict `<64 hex>  <path>` lines.
import fc from 'fast-check';
import { formatSha256Sums, parseSha256Sums } from '../../../src/trust/sha256sums.js';
import { TrustError } from '../../../src/trust/trust-error.js';
import { holds, refusedWith, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const hex = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'));
const path = fc.oneof(
  fc.constantFrom('fleet.toml', 'plans/a.toml', 'recipes/b.toml', './plans/a.toml', '../x', 'a b', ' lead'),
  fc.string({ minLength: 1, maxLength: 20 }),
);
const line = fc.tuple(hex, fc.constantFrom('  ', ' *', ' ', '\t'), path).map(([h, sep, p]) => `${h}${sep}${p}`);

export const sha256sums: FuzzTarget = {
  name: 'sha256sums',
  parses: 'parseSha256Sums (src/trust/sha256sums.ts): SHA256SUMS from the repository',
  maxBytes: 8 * 1024,
  testRuns: 2_000,
  dictionary: ['  ', ' *', './', '\r', 'recipes/', 'plans/', 'a'.repeat(64)],
  structured: fc.array(line, { maxLength: 6 }).map((ls) => text(ls.join('\n') + '\n')),
  check(input) {
    const source = utf8(input);
    let sums: Map<string, string>;
    try {
      sums = parseSha256Sums(source);
    } catch (e) {
      return refusedWith(e, (x) => x instanceof TrustError && x.code === 'KS_SUMS_MALFORMED');
    }
    for (const [p, digest] of sums) {
      holds(/^[0-9a-f]{64}$/.test(digest), `digest ${digest} of ${p} is not 64 hex`);
      holds(p.length > 0 && !p.includes('\n'), `path ${JSON.stringify(p)} is empty or spans lines`);
    }
    // What it accepts, it writes back in a form it reads as the same map.
    const again = parseSha256Sums(formatSha256Sums(sums));
    holds(
      again.size === sums.size && [...sums].every(([p, d]) => again.get(p) === d),
      'formatSha256Sums does not read back as the same sums',
    );
    return 'accepted';
  },
};
