// minisign's key and signature formats (https://jedisct1.github.io/minisign/): signing with tweetnacl's Ed25519, verifying with Node's, BLAKE2b for prehashed signatures.
import { blake2b } from '@noble/hashes/blake2.js';
import nacl from 'tweetnacl';
import { hasSmallOrder, isCanonicalScalar, isStrongPublicKey } from './ed25519-checks.js';
import { deriveKeyStream, MINISIGN_MEMLIMIT, MINISIGN_OPSLIMIT } from './scrypt-kdf.js';
import { TrustError } from './trust-error.js';
import { ALG_ED, ALG_ED_HASHED, CHK_BLAKE2, KDF_SCRYPT, decodeB64, enc, equal, lines } from './minisign-bytes.js';
import { ed25519Verify } from './ed25519-verify.js';

export interface PublicKey {
  /** 8 bytes, as stored. */
  keyId: Uint8Array;
  publicKey: Uint8Array;
}

export interface SecretKey extends PublicKey {
  /** tweetnacl's 64-byte secret key (seed ‖ public key). */
  secretKey: Uint8Array;
}

export type SignatureAlgorithm = 'prehashed' | 'legacy';

export interface Signature {
  algorithm: SignatureAlgorithm;
  keyId: Uint8Array;
  signature: Uint8Array;
  untrustedComment: string;
  trustedComment: string;
  globalSignature: Uint8Array;
}

/** minisign prints key ids as the little-endian 64-bit number in upper-case hex, without leading zeros (printf's %PRIX64). */
export function keyIdHex(keyId: Uint8Array): string {
  return Buffer.from(keyId)
    .reverse()
    .toString('hex')
    .toUpperCase()
    .replace(/^0+(?=.)/, '');
}

/** Parses a `minisign.pub` file, or a bare base64 public key (minisign -P). Weak keys are refused here. */
export function parsePublicKey(text: string): PublicKey {
  const ls = lines(text.trim());
  const b64 = ls.length === 1 ? ls[0] : ls[0]?.startsWith('untrusted comment:') ? ls[1] : undefined;
  const raw = decodeB64(b64?.trim(), 42, 'public key', 'KS_KEY_MALFORMED');
  if (!equal(raw.subarray(0, 2), ALG_ED))
    throw new TrustError('KS_KEY_MALFORMED', 'public key: not an Ed25519 minisign key');
  const key = { keyId: raw.slice(2, 10), publicKey: raw.slice(10, 42) };
  if (!isStrongPublicKey(key.publicKey))
    throw new TrustError(
      'KS_WEAK_KEY',
      `public key ${keyIdHex(key.keyId)} is a small-order or non-canonical point and can never be trusted`,
      undefined,
      keyIdHex(key.keyId),
    );
  return key;
}

export function formatPublicKey(k: PublicKey): string {
  const raw = Buffer.concat([ALG_ED, k.keyId, k.publicKey]);
  return `untrusted comment: minisign public key ${keyIdHex(k.keyId)}\n${raw.toString('base64')}\n`;
}

/** True when the secret key file is password-protected, so the caller knows to ask for one. */
export function secretKeyIsEncrypted(text: string): boolean {
  const raw = decodeB64(lines(text.trim())[1]?.trim(), 158, 'secret key', 'KS_KEY_MALFORMED');
  return equal(raw.subarray(2, 4), KDF_SCRYPT);
}

function checksum(keyId: Uint8Array, sk: Uint8Array): Uint8Array {
  return blake2b(Buffer.concat([ALG_ED, keyId, sk]), { dkLen: 32 });
}

/** Parses (and decrypts, with `password`) a minisign secret key file; a wrong password fails its checksum. */
export async function parseSecretKey(text: string, password?: Uint8Array): Promise<SecretKey> {
  const ls = lines(text.trim());
  if (!ls[0]?.startsWith('untrusted comment:'))
    throw new TrustError('KS_KEY_MALFORMED', 'secret key: missing the untrusted comment line');
  const raw = decodeB64(ls[1]?.trim(), 158, 'secret key', 'KS_KEY_MALFORMED');
  if (!equal(raw.subarray(0, 2), ALG_ED) || !equal(raw.subarray(4, 6), CHK_BLAKE2))
    throw new TrustError('KS_KEY_MALFORMED', 'secret key: not an Ed25519 minisign key with a BLAKE2b checksum');
  const kdf = raw.subarray(2, 4);
  const salt = raw.subarray(6, 38);
  const view = new DataView(raw.buffer, raw.byteOffset);
  const opslimit = view.getBigUint64(38, true);
  const memlimit = view.getBigUint64(46, true);
  const body = raw.slice(54, 158);
  if (equal(kdf, KDF_SCRYPT)) {
    if (!password)
      throw new TrustError('KS_KEY_PASSWORD', 'secret key is password-protected and no password was given');
    let stream: Buffer;
    try {
      stream = await deriveKeyStream(password, salt, opslimit, memlimit, body.length);
    } catch (e) {
      throw new TrustError('KS_KEY_MALFORMED', `secret key: ${(e as Error).message}`);
    }
    for (let i = 0; i < body.length; i++) body[i]! ^= stream[i]!;
  } else if (kdf[0] !== 0 || kdf[1] !== 0)
    throw new TrustError('KS_KEY_MALFORMED', 'secret key: unknown key derivation');
  const keyId = body.slice(0, 8);
  const secretKey = body.slice(8, 72);
  const chk = body.subarray(72, 104);
  // `minisign -G -W` leaves the checksum of an unencrypted key zeroed; the seed → public key check below still catches corruption.
  const unencryptedZeroChk = !equal(kdf, KDF_SCRYPT) && chk.every((b) => b === 0);
  if (!unencryptedZeroChk && !equal(checksum(keyId, secretKey), chk))
    throw new TrustError(
      'KS_KEY_PASSWORD',
      equal(kdf, KDF_SCRYPT) ? 'wrong password for the secret key' : 'secret key: checksum mismatch (corrupt key file)',
    );
  const publicKey = secretKey.slice(32, 64);
  if (!equal(nacl.sign.keyPair.fromSeed(secretKey.slice(0, 32)).publicKey, publicKey))
    throw new TrustError(
      equal(kdf, KDF_SCRYPT) ? 'KS_KEY_PASSWORD' : 'KS_KEY_MALFORMED',
      'secret key: its halves do not belong together (corrupt key file or wrong password)',
    );
  return { keyId, secretKey, publicKey };
}

/** Writes a secret key file minisign reads; encrypted with minisign's own scrypt parameters when a password is given. */
export async function formatSecretKey(
  k: SecretKey,
  password: Uint8Array | undefined,
  randomBytes: (n: number) => Uint8Array,
): Promise<string> {
  const body = Buffer.concat([k.keyId, k.secretKey, checksum(k.keyId, k.secretKey)]);
  const salt = password ? randomBytes(32) : new Uint8Array(32);
  const params = Buffer.alloc(16);
  if (password) {
    params.writeBigUInt64LE(MINISIGN_OPSLIMIT, 0);
    params.writeBigUInt64LE(MINISIGN_MEMLIMIT, 8);
    const stream = await deriveKeyStream(password, salt, MINISIGN_OPSLIMIT, MINISIGN_MEMLIMIT, body.length);
    for (let i = 0; i < body.length; i++) body[i]! ^= stream[i]!;
  }
  const raw = Buffer.concat([ALG_ED, password ? KDF_SCRYPT : new Uint8Array(2), CHK_BLAKE2, salt, params, body]);
  return `untrusted comment: minisign ${password ? 'encrypted ' : ''}secret key\n${raw.toString('base64')}\n`;
}

/** A new key pair from injected randomness (seed and key id), so tests are repeatable. */
export function generateKey(randomBytes: (n: number) => Uint8Array): SecretKey {
  const pair = nacl.sign.keyPair.fromSeed(randomBytes(32));
  return { keyId: randomBytes(8), secretKey: pair.secretKey, publicKey: pair.publicKey };
}

/** Parses every signature block of a `.minisig` file: several signers may each append one (k-of-n). */
export function parseSignatures(text: string): Signature[] {
  const ls = lines(text).filter((l) => l.trim() !== '');
  if (ls.length === 0 || ls.length % 4 !== 0)
    throw new TrustError(
      'KS_SIGNATURE_MALFORMED',
      `a signature file holds blocks of 4 lines; this one has ${ls.length}`,
    );
  const out: Signature[] = [];
  for (let i = 0; i < ls.length; i += 4) {
    const [uc, sigLine, tc, globalLine] = ls.slice(i, i + 4) as [string, string, string, string];
    if (!uc.startsWith('untrusted comment:'))
      throw new TrustError('KS_SIGNATURE_MALFORMED', `signature block ${i / 4 + 1}: missing the untrusted comment`);
    if (!tc.startsWith('trusted comment: '))
      throw new TrustError('KS_SIGNATURE_MALFORMED', `signature block ${i / 4 + 1}: missing the trusted comment`);
    const raw = decodeB64(sigLine.trim(), 74, `signature block ${i / 4 + 1}`, 'KS_SIGNATURE_MALFORMED');
    const alg = raw.subarray(0, 2);
    const algorithm: SignatureAlgorithm | undefined = equal(alg, ALG_ED_HASHED)
      ? 'prehashed'
      : equal(alg, ALG_ED)
        ? 'legacy'
        : undefined;
    if (!algorithm)
      throw new TrustError('KS_SIGNATURE_MALFORMED', `signature block ${i / 4 + 1}: unknown signature algorithm`);
    out.push({
      algorithm,
      keyId: raw.slice(2, 10),
      signature: raw.slice(10, 74),
      untrustedComment: uc.slice('untrusted comment:'.length).trim(),
      trustedComment: tc.slice('trusted comment: '.length),
      globalSignature: decodeB64(
        globalLine.trim(),
        64,
        `signature block ${i / 4 + 1} (global)`,
        'KS_SIGNATURE_MALFORMED',
      ),
    });
  }
  return out;
}

export function formatSignature(s: Signature): string {
  const raw = Buffer.concat([s.algorithm === 'prehashed' ? ALG_ED_HASHED : ALG_ED, s.keyId, s.signature]);
  return `untrusted comment: ${s.untrustedComment}\n${raw.toString('base64')}\ntrusted comment: ${s.trustedComment}\n${Buffer.from(s.globalSignature).toString('base64')}\n`;
}

/** Signs like `minisign -S` (prehashed by default, `-l` legacy): the trusted comment carries the signing time. */
export function sign(
  message: Uint8Array,
  key: SecretKey,
  trustedComment: string,
  algorithm: SignatureAlgorithm = 'prehashed',
  untrustedComment = 'signature from keystone secret key',
): Signature {
  const signed = algorithm === 'prehashed' ? blake2b(message) : message;
  const signature = nacl.sign.detached(signed, key.secretKey);
  const globalSignature = nacl.sign.detached(Buffer.concat([signature, enc.encode(trustedComment)]), key.secretKey);
  return { algorithm, keyId: key.keyId, signature, untrustedComment, trustedComment, globalSignature };
}

/**
 * Verifies one signature block against one key, as strictly as libsodium: the key id must match,
 * S must be canonical, R must not be of small order, then the signature and the global signature
 * over the trusted comment. Throws TrustError with the failed check; returns nothing on success.
 */
export function verifySignature(
  message: Uint8Array,
  sig: Signature,
  key: PublicKey,
  file = 'SHA256SUMS.minisig',
): void {
  const id = keyIdHex(key.keyId);
  if (!equal(sig.keyId, key.keyId))
    throw new TrustError(
      'KS_UNTRUSTED_KEY',
      `signed by key ${keyIdHex(sig.keyId)}, not ${id}`,
      file,
      keyIdHex(sig.keyId),
    );
  for (const [s, what] of [
    [sig.signature, 'signature'],
    [sig.globalSignature, 'trusted comment signature'],
  ] as const) {
    if (!isCanonicalScalar(s.subarray(32)) || hasSmallOrder(s.subarray(0, 32)))
      throw new TrustError(
        'KS_SIGNATURE_NONCANONICAL',
        `the ${what} by key ${id} is non-canonical (malleated)`,
        file,
        id,
      );
  }
  const signed = sig.algorithm === 'prehashed' ? blake2b(message) : message;
  if (!ed25519Verify(signed, sig.signature, key.publicKey))
    throw new TrustError('KS_SIGNATURE_INVALID', `the signature by key ${id} does not match the signed file`, file, id);
  if (
    !ed25519Verify(Buffer.concat([sig.signature, enc.encode(sig.trustedComment)]), sig.globalSignature, key.publicKey)
  )
    throw new TrustError('KS_TRUSTED_COMMENT_INVALID', `the trusted comment signed by key ${id} was altered`, file, id);
}

/**
 * A bare Ed25519 signature (no minisign framing: a device's report, SPEC §15), as strictly as verifySignature: S
 * canonical, R not of small order, then the signature itself.
 */
export function verifyEd25519(message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== 64 || !isCanonicalScalar(signature.subarray(32)) || hasSmallOrder(signature.subarray(0, 32)))
    return false;
  return ed25519Verify(message, signature, publicKey);
}

/** The signing time from a trusted comment (`timestamp:1700000000\tfile:…`), in seconds since the epoch. */
export function signedTimestamp(trustedComment: string): number | undefined {
  const m = /(?:^|\s)timestamp:(\d{1,15})(?:\s|$)/.exec(trustedComment);
  return m ? Number(m[1]) : undefined;
}

/**
 * The ref a signature is meant for (`ref=refs/heads/main` in the trusted comment, SPEC §6), or undefined when it
 * names none. Two `ref=` fields make it malformed (undefined would read as "unbound"), so they give null.
 */
export function signedRef(trustedComment: string): string | null | undefined {
  const all = [...trustedComment.matchAll(/(?:^|\s)ref=(\S+)(?=\s|$)/g)];
  if (all.length > 1) return null;
  return all[0]?.[1];
}
