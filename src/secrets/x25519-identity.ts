// An age X25519 identity (https://age-encryption.org/v1, "X25519 recipient type") unwrapping file keys with node:crypto
// (OpenSSL), for age-encryption's Decrypter. age-encryption's own identity does the same with a WebCrypto round trip
// and JavaScript HKDF and ChaCha20-Poly1305 per stanza; a device opens its target's key file by trying every stanza
// until its own (one per device of the target), so the cost per stanza is the cost of a large target: ~10× less here
// (`npm run bench -- secrets`). The format stays age-encryption's: only the arithmetic of one stanza is done here.
import {
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  hkdfSync,
  type KeyObject,
} from 'node:crypto';
import { bech32Decode } from '../identity/bech32.js';

/** DER prefixes of X25519 keys (RFC 8410): the 32 key bytes follow. */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const LABEL = Buffer.from('age-encryption.org/v1/X25519');
const ZERO_NONCE = Buffer.alloc(12);

interface Stanza {
  readonly args: string[];
  readonly body: Uint8Array;
}

export class NodeX25519Identity {
  private readonly privateKey: KeyObject;
  private readonly recipient: Buffer;

  /** `identity`: `AGE-SECRET-KEY-1…`; throws (without quoting it) when it is not one. */
  constructor(identity: string) {
    const decoded = identity.startsWith('AGE-SECRET-KEY-1') ? bech32Decode(identity) : undefined;
    if (!decoded || decoded.hrp !== 'age-secret-key-' || decoded.bytes.length !== 32)
      throw new Error('not an age X25519 identity');
    this.privateKey = createPrivateKey({
      key: Buffer.concat([PKCS8_PREFIX, decoded.bytes]),
      format: 'der',
      type: 'pkcs8',
    });
    const spki = createPublicKey(this.privateKey).export({ format: 'der', type: 'spki' });
    this.recipient = spki.subarray(spki.length - 32);
  }

  /** The file key from the first X25519 stanza made for this identity; null when none is (age's own contract). */
  unwrapFileKey(stanzas: Stanza[]): Uint8Array | null {
    for (const s of stanzas) {
      if (s.args[0] !== 'X25519') continue;
      if (s.args.length !== 2 || !/^[A-Za-z0-9+/]{43}$/.test(s.args[1]!) || s.body.length !== 32)
        throw new Error('invalid X25519 stanza');
      const share = Buffer.from(s.args[1]!, 'base64');
      if (share.length !== 32) throw new Error('invalid X25519 stanza');
      let secret: Buffer;
      try {
        secret = diffieHellman({
          privateKey: this.privateKey,
          publicKey: createPublicKey({ key: Buffer.concat([SPKI_PREFIX, share]), format: 'der', type: 'spki' }),
        });
      } catch {
        // OpenSSL refuses a low-order point (an all-zero shared secret), which age refuses too.
        throw new Error('invalid X25519 stanza');
      }
      const key = Buffer.from(hkdfSync('sha256', secret, Buffer.concat([share, this.recipient]), LABEL, 32));
      const decipher = createDecipheriv('chacha20-poly1305', key, ZERO_NONCE, { authTagLength: 16 });
      decipher.setAuthTag(Buffer.from(s.body.subarray(16)));
      try {
        const fileKey = Buffer.concat([decipher.update(Buffer.from(s.body.subarray(0, 16))), decipher.final()]);
        return new Uint8Array(fileKey);
      } catch {
        // Another recipient's stanza: not ours, try the next.
      }
    }
    return null;
  }
}
