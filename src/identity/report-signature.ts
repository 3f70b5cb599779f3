// A device's signature on what it reports (SPEC §8, §15): its notes entries and its rollout refs. The signature is a
// bare Ed25519 signature by the device's report key over a message that names what the report says, so a report
// cannot be moved to another commit, device, wave or state; the report names the key by its id, so a reader finds
// which certificate to check it against (and tells a reinstalled device's old key from a forgery).
//
// In a rollout ref the signature rides in the ref's name, `.<key id><signature>` after the state: the gate reads ref
// names only (no objects), and a name is what it counts. 16 hex digits of key id and 86 of base64url signature.
// In a note it is the entry's last line, `  ~ <key id> <signature>` (status-note.ts).
import { createPrivateKey, sign as cryptoSign, type KeyObject } from 'node:crypto';
import type { SecretKey } from '../trust/minisign.js';

/** Signs reports with the device's key. */
export interface ReportSigner {
  /** 16 lowercase hex: the key id bytes as minisign stores them. */
  readonly keyId: string;
  sign(message: Uint8Array): Uint8Array;
}

/** What a report carries to be checked: the signing key's id and the signature. */
export interface ReportSignature {
  keyId: string;
  signature: Uint8Array;
}

export const KEY_ID = /^[0-9a-f]{16}$/;
const SIG_B64URL = /^[A-Za-z0-9_-]{86}$/;

/** The key id as a report names it: 16 lowercase hex of the 8 bytes as stored. */
export function reportKeyId(keyId: Uint8Array): string {
  return Buffer.from(keyId).toString('hex');
}

/** DER prefix of an Ed25519 PKCS#8 private key (RFC 8410): the 32-byte seed follows. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A signer over the device's minisign secret key, signing with Node's Ed25519 (OpenSSL: a few µs a report). */
export function reportSigner(key: SecretKey): ReportSigner {
  const privateKey: KeyObject = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, key.secretKey.subarray(0, 32)]),
    format: 'der',
    type: 'pkcs8',
  });
  return { keyId: reportKeyId(key.keyId), sign: (message) => new Uint8Array(cryptoSign(null, message, privateKey)) };
}

const enc = new TextEncoder();

/** What a notes entry's signature covers: the commit it is noted on, and the entry's lines but the signature's own. */
export function noteMessage(commit: string, lines: readonly string[]): Uint8Array {
  return enc.encode(`keystone-report v1\n${commit}\n${lines.join('\n')}\n`);
}

/** What a rollout ref's signature covers: everything its name says. */
export function rolloutMessage(r: { wave: string; device: string; commit: string; state: string }): Uint8Array {
  return enc.encode(`keystone-rollout v1\n${r.wave}\n${r.device}\n${r.commit}\n${r.state}\n`);
}

/** `<key id><signature>`, as a rollout ref's name carries it (102 characters). */
export function formatRefSignature(s: ReportSignature): string {
  return `${s.keyId}${Buffer.from(s.signature).toString('base64url')}`;
}

export function parseRefSignature(text: string): ReportSignature | undefined {
  const keyId = text.slice(0, 16);
  const sig = text.slice(16);
  if (!KEY_ID.test(keyId) || !SIG_B64URL.test(sig)) return undefined;
  const signature = new Uint8Array(Buffer.from(sig, 'base64url'));
  // One encoding only: a second spelling of the same signature would be a second ref name for the same report.
  if (signature.length !== 64 || Buffer.from(signature).toString('base64url') !== sig) return undefined;
  return { keyId, signature };
}

export function signWith(signer: ReportSigner, message: Uint8Array): ReportSignature {
  return { keyId: signer.keyId, signature: signer.sign(message) };
}
