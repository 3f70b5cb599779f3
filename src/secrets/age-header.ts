// The recipient stanzas of an age file's header (https://age-encryption.org/v1): one `-> TYPE …` line each, in the
// clear. Not who the recipients are (an X25519 stanza names none), only how many there are: enough to tell that a
// secret is encrypted to more than the targets an operator can identify, so a rekey never silently drops a reader,
// and to refuse a header too long to be worth trying (MAX_STANZAS) before any identity tries it.

const ARMOR_BEGIN = '-----BEGIN AGE ENCRYPTED FILE-----';
const BINARY_MAGIC = 'age-encryption.org/v1\n';
const ARMOR = /-----BEGIN AGE ENCRYPTED FILE-----([\s\S]*?)-----END AGE ENCRYPTED FILE-----/;
/** The header is small: a few hundred bytes a recipient. This much of the binary covers thousands. */
const MAX_HEADER_BYTES = 1024 * 1024;

/**
 * The most stanzas an age file may have to be opened at all. Every identity tries every X25519 stanza (an X25519
 * exchange each): 8,192 cost a second and a half, and a file of tiny stanzas of an unknown type costs as much to
 * parse, so a header with more is refused unread (`decryptWith`). No file Keystone makes comes near it: a target
 * key file, the largest, has one stanza per device and operator (~133 bytes armored, as keystonectl writes it), so
 * a 1 MiB one (the most a device reads) holds ~7,900.
 */
export const MAX_STANZAS = 8192;

/** Whether `bytes` look like an age file at all: its binary header line, or the armor's first line. */
export function ageFormat(bytes: Uint8Array): 'binary' | 'armored' | undefined {
  const head = new TextDecoder().decode(bytes.subarray(0, 64));
  if (head.startsWith(BINARY_MAGIC)) return 'binary';
  if (head.trimStart().startsWith(ARMOR_BEGIN)) return 'armored';
  return undefined;
}

/** Every stanza's type in header order (`X25519`, `scrypt`, `…-grease`); undefined when not an age file. */
function stanzaTypes(file: Uint8Array): string[] | undefined {
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
  for (const line of head.slice(0, end).split('\n'))
    if (line.startsWith('-> ')) types.push(line.slice(3).split(' ', 1)[0]!);
  return types;
}

/** The stanza types in header order (`X25519`, `scrypt`, …), without grease stanzas; undefined when not an age file. */
export function recipientStanzas(file: Uint8Array): string[] | undefined {
  return stanzaTypes(file)?.filter((type) => !type.endsWith('-grease'));
}

/** How many stanzas the header has, grease and unknown types included; undefined when it cannot be told. */
export function stanzaCount(file: Uint8Array): number | undefined {
  return stanzaTypes(file)?.length;
}
