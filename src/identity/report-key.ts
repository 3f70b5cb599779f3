// A device's report key as one base64 line: how a certificate and devices/revoked.toml spell a minisign public key.
// Apart from certificate.ts because the revocation list checks the same spelling and needs none of the certificate.
import { parsePublicKey, type PublicKey } from '../trust/minisign.js';
import { TrustError } from '../trust/trust-error.js';

/** The base64 line of a minisign public key, as a certificate and `keystone identity` spell a report key. */
export function reportKeyLine(key: PublicKey): string {
  return Buffer.concat([Buffer.from('Ed', 'latin1'), key.keyId, key.publicKey]).toString('base64');
}

/** Why `text` is not a report key as a certificate spells it (one base64 line of a strong minisign key), or undefined. */
export function reportKeyProblem(text: string): string | undefined {
  if (!/^[A-Za-z0-9+/]{56}$/.test(text))
    return `${JSON.stringify(text.length > 80 ? text.slice(0, 80) + '…' : text)} is not a minisign public key's base64 line (RW…, 56 characters)`;
  try {
    parsePublicKey(text);
    return undefined;
  } catch (e) {
    if (e instanceof TrustError) return `not a usable minisign public key: ${e.message}`;
    throw e;
  }
}
