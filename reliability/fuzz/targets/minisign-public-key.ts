// minisign public keys (src/trust/minisign.ts parsePublicKey, src/trust/keyring.ts): the files given with
// --trusted-key, from an operator or a provisioning script; weak (small-order, non-canonical) keys are refused.
import fc from 'fast-check';
import { isStrongPublicKey } from '../../../src/trust/ed25519-checks.js';
import { buildKeyring } from '../../../src/trust/keyring.js';
import { formatPublicKey, keyIdHex, parsePublicKey } from '../../../src/trust/minisign.js';
import { TrustError } from '../../../src/trust/trust-error.js';
import { holds, refusedWith, text, utf8, type FuzzTarget } from '../fuzz-target.js';

const KEY_CODES = new Set(['KS_KEY_MALFORMED', 'KS_WEAK_KEY']);
const isKeyError = (e: unknown) => e instanceof TrustError && KEY_CODES.has(e.code);

/** "Ed" + 8-byte id + 32 arbitrary key bytes: well-formed files whose point may be anything, weak ones included. */
const anyPoint = fc
  .tuple(
    fc.uint8Array({ minLength: 8, maxLength: 8 }),
    fc.oneof(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.constantFrom(
        new Uint8Array(32),
        new Uint8Array(32).fill(0xff),
        Uint8Array.from([1, ...new Array<number>(31).fill(0)]),
      ),
    ),
    fc.boolean(),
  )
  .map(([id, pk, comment]) => {
    const b64 = Buffer.concat([Buffer.from('Ed'), id, pk]).toString('base64');
    return text(comment ? `untrusted comment: minisign public key\n${b64}\n` : b64);
  });

export const minisignPublicKey: FuzzTarget = {
  name: 'minisign-public-key',
  parses: 'parsePublicKey + buildKeyring (src/trust/minisign.ts, keyring.ts): --trusted-key files',
  maxBytes: 1024,
  testRuns: 2_000,
  dictionary: ['untrusted comment: ', 'RWQ', '=', '\r\n'],
  structured: anyPoint,
  check(input) {
    const source = utf8(input);
    let key;
    try {
      key = parsePublicKey(source);
    } catch (e) {
      // The keyring refuses the same file with the same code, naming it.
      try {
        buildKeyring([{ source: 'fuzz.pub', text: source }]);
      } catch (k) {
        holds(
          k instanceof TrustError && k.code === (e as TrustError).code,
          `buildKeyring refused with ${(k as TrustError).code}, parsePublicKey with ${(e as TrustError).code}`,
        );
      }
      return refusedWith(e, isKeyError);
    }
    holds(key.keyId.length === 8 && key.publicKey.length === 32, 'a key of the wrong size');
    holds(isStrongPublicKey(key.publicKey), 'a weak key was accepted');
    const again = parsePublicKey(formatPublicKey(key));
    holds(keyIdHex(again.keyId) === keyIdHex(key.keyId), 'formatPublicKey does not read back');
    holds(buildKeyring([{ source: 'fuzz.pub', text: source }]).keys.size === 1, 'the keyring lost the key');
    return 'accepted';
  },
};
