// The syntax of an age X25519 recipient (https://age-encryption.org/v1): `age1` then the bech32 (BIP 173) encoding
// of the 32-byte public key, lower case. Checked in full (checksum, padding, length) wherever a recipient enters
// from outside — an identity handed to `keystonectl enroll`, a certificate — so a typo is refused there, naming the
// file, rather than when the first secret is encrypted to a key nobody holds.
import { bech32Decode } from './bech32.js';

/** Why `text` is not an age recipient, or undefined when it is one. */
export function ageRecipientProblem(text: string): string | undefined {
  const what = `${JSON.stringify(text.length > 80 ? text.slice(0, 80) + '…' : text)} is not an age recipient`;
  // Upper case is valid bech32, but age prints and compares recipients in lower case: one spelling per key.
  if (!text.startsWith('age1') || text !== text.toLowerCase()) return `${what} (age1…, in lower case)`;
  const decoded = bech32Decode(text);
  if (!decoded) return `${what} (its bech32 checksum or padding is wrong: a typo?)`;
  if (decoded.hrp !== 'age' || decoded.bytes.length !== 32)
    return `${what} (it holds ${decoded.bytes.length} bytes, not an X25519 key's 32)`;
  return undefined;
}
