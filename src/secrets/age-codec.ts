// age (https://age-encryption.org/v1) through age-encryption, the TypeScript implementation by age's author: loaded on
// first use only (several MiB a device that reads no secret never pays). Files are armored or binary, as `age` writes.
import { ageFormat, MAX_STANZAS, stanzaCount } from './age-header.js';
import { NodeX25519Identity } from './x25519-identity.js';

export { ageFormat } from './age-header.js';

type AgeModule = typeof import('age-encryption');
let loaded: Promise<AgeModule> | undefined;
const age = (): Promise<AgeModule> => (loaded ??= import('age-encryption'));

/** `plaintext` encrypted to every recipient (`age1…`); armored (text, diffable in Git) unless `binary`. */
export async function encryptTo(
  recipients: readonly string[],
  plaintext: Uint8Array,
  o: { binary?: boolean } = {},
): Promise<Uint8Array> {
  if (recipients.length === 0) throw new Error('no recipient to encrypt to');
  const { Encrypter, armor } = await age();
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r);
  const bytes = await e.encrypt(plaintext);
  return o.binary ? bytes : new TextEncoder().encode(armor.encode(bytes));
}

/**
 * The plaintext of an age file, with the first identity (`AGE-SECRET-KEY-1…`) that opens it; `undefined` when none of
 * them is a recipient. Throws `Error` (message without any secret) when the file is not an age file, is damaged, or has
 * more than MAX_STANZAS recipient stanzas (refused before any is tried: a pull request's checkout may hold such a file,
 * and `secret ls` or `apply-dry` would spend seconds on each).
 */
export async function decryptWith(identities: readonly string[], file: Uint8Array): Promise<Uint8Array | undefined> {
  const format = ageFormat(file);
  if (!format)
    throw new Error('not an age file (neither "age-encryption.org/v1" nor "-----BEGIN AGE ENCRYPTED FILE-----")');
  const stanzas = stanzaCount(file) ?? 0;
  if (stanzas > MAX_STANZAS)
    throw new Error(
      `too many recipients: ${stanzas} stanzas in the header, more than the ${MAX_STANZAS} a file is opened with`,
    );
  const { Decrypter, armor } = await age();
  let binary = file;
  if (format === 'armored') {
    try {
      binary = armor.decode(new TextDecoder('utf-8', { fatal: true }).decode(file));
    } catch (e) {
      throw new Error(`damaged armor: ${(e as Error).message}`);
    }
  }
  const d = new Decrypter();
  // X25519 identities through node:crypto (x25519-identity.ts): the same format, a tenth of the cost per stanza.
  for (const i of identities) d.addIdentity(x25519Identity(i));
  try {
    return await d.decrypt(binary);
  } catch (e) {
    const message = (e as Error).message;
    // age-encryption says so in words; every other failure is a damaged file (header, MAC, payload).
    if (/no identity matched/i.test(message)) return undefined;
    throw new Error(`damaged age file: ${message}`);
  }
}

function x25519Identity(identity: string): NodeX25519Identity | string {
  try {
    return new NodeX25519Identity(identity);
  } catch {
    return identity; // not X25519 (a post-quantum one): age-encryption's own
  }
}

/** A new X25519 identity and its recipient. */
export async function newAgeIdentity(): Promise<{ identity: string; recipient: string }> {
  const { generateX25519Identity, identityToRecipient } = await age();
  const identity = await generateX25519Identity();
  return { identity, recipient: await identityToRecipient(identity) };
}

/**
 * The recipients of a recipients file as `age -R` reads it: one per line, `#` comments and blank lines skipped.
 * Only X25519 recipients (`age1…`); anything else is named by its line.
 */
export function parseRecipients(text: string, file: string): string[] {
  const out: string[] = [];
  for (const [i, raw] of text.replace(/\r\n/g, '\n').split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (!/^age1[02-9ac-hj-np-z]{58}$/.test(line))
      throw new Error(`${file}:${i + 1}: not an age X25519 recipient (age1…)`);
    out.push(line);
  }
  return out;
}
