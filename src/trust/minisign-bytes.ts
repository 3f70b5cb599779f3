// The byte-level pieces of minisign's key and signature files (minisign.ts): the algorithm and KDF tags, and reading a
// base64 line of an exact length. Apart so minisign.ts holds the formats themselves: parse, format, sign, verify.
import { TrustError } from './trust-error.js';

export const enc = new TextEncoder();
export const ALG_ED = Uint8Array.from([0x45, 0x64]); // "Ed": legacy signatures and every key
export const ALG_ED_HASHED = Uint8Array.from([0x45, 0x44]); // "ED": signature over BLAKE2b-512 of the message
export const KDF_SCRYPT = Uint8Array.from([0x53, 0x63]); // "Sc"
export const CHK_BLAKE2 = Uint8Array.from([0x42, 0x32]); // "B2"

export const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

export function decodeB64(
  line: string | undefined,
  length: number,
  what: string,
  code: 'KS_KEY_MALFORMED' | 'KS_SIGNATURE_MALFORMED',
): Uint8Array {
  if (line === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(line)) throw new TrustError(code, `${what}: not base64`);
  const bytes = new Uint8Array(Buffer.from(line, 'base64'));
  if (bytes.length !== length) throw new TrustError(code, `${what}: ${bytes.length} bytes, expected ${length}`);
  return bytes;
}

export function lines(text: string): string[] {
  return text.replace(/\r\n/g, '\n').split('\n');
}
