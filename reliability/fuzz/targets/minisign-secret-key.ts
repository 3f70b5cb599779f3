// minisign secret keys (src/trust/minisign.ts parseSecretKey): `keystonectl sign` reads them; encrypted ones are
// decrypted with scrypt at parameters the file itself states, so a hostile file must not make it eat the machine.
import fc from 'fast-check';
import { parseSecretKey, secretKeyIsEncrypted } from '../../../src/trust/minisign.js';
import { pickScryptParams } from '../../../src/trust/scrypt-kdf.js';
import { TrustError } from '../../../src/trust/trust-error.js';
import { holds, refusedWith, text, utf8, type FuzzTarget } from '../fuzz-target.js';
import nacl from 'tweetnacl';

const PASSWORD = new TextEncoder().encode('fuzz');
/** What scrypt may cost per input here: a real minisign key (1 GiB, seconds) is valid but not something to run 100,000 times. */
const FUZZ_SCRYPT_BYTES = 8 * 1024 * 1024;
/** The bound parseSecretKey itself enforces (scrypt-kdf.ts): above it, the key must be refused at once. */
const MAX_SCRYPT_BYTES = 4 * 1024 ** 3;

/** The scrypt memory the key file asks for, or undefined when it is not an encrypted key at all. */
function scryptBytes(source: string): number | undefined {
  const b64 = source.trim().replace(/\r\n/g, '\n').split('\n')[1]?.trim() ?? '';
  const raw = Buffer.from(b64, 'base64');
  if (raw.length !== 158 || raw.toString('latin1', 2, 4) !== 'Sc') return undefined;
  const { N, r, p } = pickScryptParams(raw.readBigUInt64LE(38), raw.readBigUInt64LE(46));
  return 128 * N * r * Math.max(p, 1);
}

/** Well-formed files: "Ed", a KDF (none, scrypt, unknown), "B2", a salt, scrypt limits from tiny to absurd, a body. */
const structured = fc
  .tuple(
    fc.constantFrom('\0\0', 'Sc', 'Xy'),
    fc.uint8Array({ minLength: 32, maxLength: 32 }),
    fc.constantFrom(0n, 32768n, 1n << 20n, 33_554_432n, 1n << 40n, (1n << 64n) - 1n),
    fc.constantFrom(0n, 1n << 24n, 1_073_741_824n, 1n << 36n, (1n << 64n) - 1n),
    fc.uint8Array({ minLength: 104, maxLength: 104 }),
  )
  .map(([kdf, salt, ops, mem, body]) => {
    const limits = Buffer.alloc(16);
    limits.writeBigUInt64LE(ops, 0);
    limits.writeBigUInt64LE(mem, 8);
    const raw = Buffer.concat([Buffer.from('Ed' + kdf + 'B2', 'latin1'), salt, limits, body]);
    return text(`untrusted comment: minisign secret key\n${raw.toString('base64')}\n`);
  });

export const minisignSecretKey: FuzzTarget = {
  name: 'minisign-secret-key',
  parses: 'parseSecretKey, secretKeyIsEncrypted (src/trust/minisign.ts): secret key files for keystonectl sign',
  maxBytes: 1024,
  testRuns: 600,
  // 100,000 take 10–15 minutes on two cores (scrypt / the disk): the default keeps `npm run fuzz` near half an hour.
  defaultRuns: 40_000,
  dictionary: ['untrusted comment: ', 'RWQAAEIy', 'RWRTY0Iy', '\r\n'],
  structured,
  async check(input) {
    const source = utf8(input);
    try {
      secretKeyIsEncrypted(source);
    } catch (e) {
      refusedWith(e, (x) => x instanceof TrustError && x.code === 'KS_KEY_MALFORMED');
    }
    const need = scryptBytes(source);
    // Cheap scrypt, or parameters the parser must refuse before running it: with the password. In between: without.
    const password = need === undefined || need <= FUZZ_SCRYPT_BYTES || need > MAX_SCRYPT_BYTES ? PASSWORD : undefined;
    let key;
    try {
      key = await parseSecretKey(source, password);
    } catch (e) {
      return refusedWith(
        e,
        (x) => x instanceof TrustError && (x.code === 'KS_KEY_MALFORMED' || x.code === 'KS_KEY_PASSWORD'),
      );
    }
    holds(
      key.keyId.length === 8 && key.secretKey.length === 64 && key.publicKey.length === 32,
      'a key of the wrong size',
    );
    holds(
      Buffer.from(nacl.sign.keyPair.fromSeed(key.secretKey.slice(0, 32)).publicKey).equals(Buffer.from(key.publicKey)),
      'the halves of the key do not belong together',
    );
    return 'accepted';
  },
};
