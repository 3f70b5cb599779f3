// The device's age identity file, in the form `age-keygen` writes (https://age-encryption.org/v1), so that `age -d -i`
// and `age-keygen -y` read it as they read their own:
//
//   # created: 2024-05-01T12:00:00Z
//   # public key: age1…
//   AGE-SECRET-KEY-1…
//
// Read with node:crypto's X25519 (what OpenSSL computes is what age computes: the scalar is clamped the same way), so
// that reading it at every start costs nothing; a new identity is made the same way (create-identity.ts).
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { bech32Decode, bech32Encode } from './bech32.js';
import { isoTime } from '../core/iso-time.js';

const SECRET_HRP = 'age-secret-key-';
const RECIPIENT_HRP = 'age';
/** DER prefix of an X25519 PKCS #8 private key (RFC 8410): the 32 scalar bytes follow. */
const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

export interface AgeIdentity {
  /** `AGE-SECRET-KEY-1…`: the secret. Never logged, printed or reported. */
  identity: string;
  /** `age1…`. */
  recipient: string;
}

/** The recipient (`age1…`) of an `AGE-SECRET-KEY-1…` identity; undefined when the text is not an X25519 identity. */
export function ageRecipientOf(identity: string): string | undefined {
  if (!identity.startsWith('AGE-SECRET-KEY-1')) return undefined;
  const decoded = bech32Decode(identity);
  if (!decoded || decoded.hrp !== SECRET_HRP || decoded.bytes.length !== 32) return undefined;
  const key = createPrivateKey({
    key: Buffer.concat([X25519_PKCS8_PREFIX, decoded.bytes]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  return bech32Encode(RECIPIENT_HRP, new Uint8Array(spki.subarray(spki.length - 32)));
}

/**
 * The one identity of an identity file, or why the file is not one (the reason never quotes the secret). Comments and
 * blank lines are skipped as age skips them; `# public key:`, when present, must name the identity's own recipient.
 */
export function parseAgeIdentityFile(text: string): AgeIdentity | { problem: string } {
  let found: { identity: string; line: number } | undefined;
  let stated: string | undefined;
  for (const [i, raw] of text.replace(/\r\n/g, '\n').split('\n').entries()) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s*public key:\s*(\S+)$/.exec(line);
      if (m) stated = m[1];
      continue;
    }
    if (found)
      return {
        problem: `it holds more than one identity (lines ${found.line} and ${i + 1}); the device has exactly one`,
      };
    found = { identity: line, line: i + 1 };
  }
  if (!found) return { problem: 'it holds no identity (no AGE-SECRET-KEY-1… line)' };
  const recipient = ageRecipientOf(found.identity);
  if (recipient === undefined)
    return {
      problem: `line ${found.line} is not an age X25519 identity (AGE-SECRET-KEY-1 and its bech32 encoding, checksum included)`,
    };
  if (stated !== undefined && stated !== recipient)
    return { problem: `its "# public key:" comment (${stated}) is not the identity's own recipient (${recipient})` };
  return { identity: found.identity, recipient };
}

/** The file as age-keygen writes it; `createdMs` is the comment's time (age-keygen's RFC 3339, to the second). */
export function formatAgeIdentityFile(id: AgeIdentity, createdMs: number): string {
  const created = isoTime(createdMs).replace(/\.\d{3}Z$/, 'Z');
  return `# created: ${created}\n# public key: ${id.recipient}\n${id.identity}\n`;
}
