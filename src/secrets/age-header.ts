// The recipient stanzas of an age file's header (https://age-encryption.org/v1): one `-> TYPE …` line each, in the
// clear. Not who the recipients are (an X25519 stanza names none), only how many there are: enough to tell that a
// secret is encrypted to more than the targets an operator can identify, so a rekey never silently drops a reader.
import { ageFormat } from './age-codec.js';

const ARMOR = /-----BEGIN AGE ENCRYPTED FILE-----([\s\S]*?)-----END AGE ENCRYPTED FILE-----/;
/** The header is small: a few hundred bytes a recipient. This much of the binary covers thousands. */
const MAX_HEADER_BYTES = 1024 * 1024;

/** The stanza types in header order (`X25519`, `scrypt`, …), without grease stanzas; undefined when not an age file. */
export function recipientStanzas(file: Uint8Array): string[] | undefined {
  const format = ageFormat(file);
  if (!format) return undefined;
  let binary: Uint8Array = file;
  if (format === 'armored') {
    const m = ARMOR.exec(new TextDecoder().decode(file));
    if (!m) return undefined;
    binary = Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64');
  }
  const head = new TextDecoder().decode(binary.subarray(0, MAX_HEADER_BYTES));
  const end = head.indexOf('\n---');
  if (end < 0) return undefined;
  const types: string[] = [];
  // Stanza bodies are base64 lines, which never begin with "->": every such line opens a stanza.
  for (const line of head.slice(0, end).split('\n')) {
    if (!line.startsWith('-> ')) continue;
    const type = line.slice(3).split(' ', 1)[0]!;
    if (!type.endsWith('-grease')) types.push(type);
  }
  return types;
}
