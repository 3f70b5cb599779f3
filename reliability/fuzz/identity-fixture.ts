// The enrolment key the device-certificate target verifies against, and the signing of bodies with it: seeded, so
// the corpus (signed with the same key) stays valid, and generated bodies reach the checks after the signature.
import { createHash } from 'node:crypto';
import { formatSignature, generateKey, keyIdHex, sign, type SecretKey } from '../../src/trust/minisign.js';

function seeded(name: string): (n: number) => Uint8Array {
  let counter = 0;
  return (n) => {
    const out = Buffer.alloc(n);
    for (let off = 0; off < n; off += 32) createHash('sha256').update(`${name}:${counter++}`).digest().copy(out, off);
    return new Uint8Array(out);
  };
}

/** Keystone's fuzz enrolment key (never trusted anywhere else): the corpus certificates are signed with it. */
export const FUZZ_ENROLMENT: SecretKey = generateKey(seeded('keystone fuzz enrolment key'));
/** A report key for the generated bodies. */
export const FUZZ_DEVICE: SecretKey = generateKey(seeded('keystone fuzz device key'));

/** A day after the corpus certificates were issued (2026-12-04T10:00:00Z), before any of them expires. */
export const CERT_NOW = Date.parse('2026-12-05T10:00:00Z');

/** Wraps any body in the certificate layout, signed with the fuzz enrolment key (as signCertificate lays it out). */
export function signedCertificate(body: string, trustedComment: string, key: SecretKey = FUZZ_ENROLMENT): string {
  const sig = sign(
    new TextEncoder().encode(body),
    key,
    trustedComment,
    'prehashed',
    `signature from keystone enrolment key ${keyIdHex(key.keyId)}`,
  );
  return `${body}-----BEGIN KEYSTONE SIGNATURE-----\n${formatSignature(sig)}-----END KEYSTONE SIGNATURE-----\n`;
}
