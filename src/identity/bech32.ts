// Bech32 (BIP 173, the original checksum constant 1), as age encodes its X25519 keys: `age1…` recipients and
// `AGE-SECRET-KEY-1…` identities. age sets no length limit (BIP 173's 90 characters do not apply). Here so that the
// agent can read its own age identity at every start without loading age-encryption (about 7 MiB of resident memory
// and 75 ms at each start on a device; it is loaded only to decrypt, and to make a target's key).

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

function polymod(values: readonly number[]): number {
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GENERATOR[i]!;
  }
  return chk >>> 0;
}

const expandHrp = (hrp: string): number[] => {
  const codes = [...hrp].map((c) => c.charCodeAt(0));
  return [...codes.map((c) => c >> 5), 0, ...codes.map((c) => c & 31)];
};

/** Bytes to 5-bit groups, the last one padded with zero bits. */
function toWords(bytes: Uint8Array): number[] {
  const words: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      words.push((acc >>> bits) & 31);
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) words.push((acc << (5 - bits)) & 31);
  return words;
}

/** 5-bit groups back to bytes; undefined when the padding is not the zero bits toWords leaves (a second spelling). */
function fromWords(words: readonly number[]): Uint8Array | undefined {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const w of words) {
    acc = (acc << 5) | w;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >>> bits) & 0xff);
    }
    acc &= (1 << bits) - 1;
  }
  if (bits >= 5 || acc !== 0) return undefined;
  return Uint8Array.from(out);
}

/** `hrp` + `1` + data + checksum, in lower case (age upper-cases its secret keys afterwards). */
export function bech32Encode(hrp: string, bytes: Uint8Array): string {
  const lower = hrp.toLowerCase();
  const data = toWords(bytes);
  const mod = polymod([...expandHrp(lower), ...data, 0, 0, 0, 0, 0, 0]) ^ 1;
  const checksum = [0, 1, 2, 3, 4, 5].map((i) => (mod >>> (5 * (5 - i))) & 31);
  return `${lower}1${[...data, ...checksum].map((w) => CHARSET[w]).join('')}`;
}

/**
 * The human-readable part (lower case) and the bytes of a bech32 string, or undefined when it is not one: mixed case,
 * a character outside the set, a wrong checksum, or non-zero padding.
 */
export function bech32Decode(text: string): { hrp: string; bytes: Uint8Array } | undefined {
  if (text !== text.toLowerCase() && text !== text.toUpperCase()) return undefined;
  const s = text.toLowerCase();
  const sep = s.lastIndexOf('1');
  if (sep < 1 || s.length - sep - 1 < 6) return undefined;
  const hrp = s.slice(0, sep);
  if ([...hrp].some((c) => c.charCodeAt(0) < 33 || c.charCodeAt(0) > 126)) return undefined;
  const values: number[] = [];
  for (const ch of s.slice(sep + 1)) {
    const v = CHARSET.indexOf(ch);
    if (v < 0) return undefined;
    values.push(v);
  }
  if (polymod([...expandHrp(hrp), ...values]) !== 1) return undefined;
  const bytes = fromWords(values.slice(0, -6));
  return bytes && { hrp, bytes };
}
