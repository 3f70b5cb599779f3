// minisign signature files, trusted comments included (src/trust/minisign.ts parseSignatures, verifySignature,
// signedTimestamp; src/trust/verify-revision.ts): SHA256SUMS.minisig from the repository, checked against the
// device's keyring. Seeds are signatures made by the real `minisign` binary (trust-fixture.ts).
import fc from 'fast-check';
import { parseSignatures, signedTimestamp, verifySignature, type Signature } from '../../../src/trust/minisign.js';
import { TrustError } from '../../../src/trust/trust-error.js';
import { verifyRevision } from '../../../src/trust/verify-revision.js';
import { holds, refusedWith, text, utf8, type FuzzTarget } from '../fuzz-target.js';
import { KEY_TEXTS, keyring, NOW, signedRevision, SUMS } from '../trust-fixture.js';

const isTrustError = (e: unknown) => e instanceof TrustError && /^KS_[A-Z_]+$/.test(e.code);

/** The key ids of the trusted keys a and b, and another. */
const KEY_IDS = [
  ...KEY_TEXTS.map((k) => Buffer.from(k.text.split('\n')[1]!, 'base64').subarray(2, 10)),
  Buffer.alloc(8, 7),
];

/** Blocks of four well-formed lines: an algorithm, a key id, any signature bytes, trusted comments of every shape. */
const block = fc
  .tuple(
    fc.constantFrom('ED', 'Ed', 'EX'),
    fc.constantFrom(...KEY_IDS),
    fc.uint8Array({ minLength: 64, maxLength: 64 }),
    fc.constantFrom(
      'timestamp:1764633600\tfile:SHA256SUMS\tprehashed',
      'timestamp:99999999999999',
      'timestamp:',
      'timestamp:-1',
      'file:SHA256SUMS',
      '',
      'timestamp:1764633600 timestamp:1',
      '\u0000',
    ),
    fc.uint8Array({ minLength: 64, maxLength: 64 }),
  )
  .map(([alg, id, sig, comment, global]) => {
    const raw = Buffer.concat([Buffer.from(alg, 'latin1'), id, sig]).toString('base64');
    return `untrusted comment: fuzz\n${raw}\ntrusted comment: ${comment}\n${Buffer.from(global).toString('base64')}\n`;
  });

export const minisignSignature: FuzzTarget = {
  name: 'minisign-signature',
  parses: 'parseSignatures, verifySignature, signedTimestamp, verifyRevision (src/trust/): SHA256SUMS.minisig',
  maxBytes: 4 * 1024,
  testRuns: 1_500,
  dictionary: [
    'untrusted comment: ',
    'trusted comment: ',
    'timestamp:',
    '\tfile:SHA256SUMS',
    '\tprehashed',
    'RUQ',
    'RWQ',
    '99999999999999999',
    '\r\n',
  ],
  structured: fc.array(block, { minLength: 1, maxLength: 3 }).map((bs) => text(bs.join(''))),
  async check(input) {
    const source = utf8(input);
    let signatures: Signature[];
    try {
      signatures = parseSignatures(source);
    } catch (e) {
      refusedWith(e, (x) => x instanceof TrustError && x.code === 'KS_SIGNATURE_MALFORMED');
      signatures = [];
    }
    const ring = keyring(1);
    for (const sig of signatures) {
      holds(
        sig.keyId.length === 8 && sig.signature.length === 64 && sig.globalSignature.length === 64,
        'a signature of the wrong size',
      );
      holds(!sig.trustedComment.includes('\n'), 'a trusted comment spans lines');
      const at = signedTimestamp(sig.trustedComment);
      holds(at === undefined || (Number.isSafeInteger(at) && at >= 0), `timestamp ${at} is not a time`);
      for (const key of ring.keys.values()) {
        try {
          verifySignature(SUMS, sig, key);
        } catch (e) {
          refusedWith(e, isTrustError);
        }
      }
    }
    // The whole check as the agent runs it, one key of two and both.
    let accepted = false;
    for (const threshold of [1, 2]) {
      try {
        const v = await verifyRevision(signedRevision(input), { keyring: keyring(threshold), now: NOW });
        holds(v.signers.length >= threshold && Number.isSafeInteger(v.signedAt), 'verified without enough signers');
        accepted = true;
      } catch (e) {
        refusedWith(e, isTrustError);
      }
    }
    return accepted ? 'accepted' : 'refused';
  },
};
