// The device's trusted keys and threshold: from the command line or local configuration, never from the repository.
import { keyIdHex, parsePublicKey, type PublicKey } from './minisign.js';
import { TrustError } from './trust-error.js';

export interface Keyring {
  keys: ReadonlyMap<string, PublicKey>;
  /** How many distinct trusted keys must have signed (k of n). */
  threshold: number;
}

/** Builds a keyring from public key files' contents; a weak or malformed key refuses the whole keyring. */
export function buildKeyring(keyTexts: ReadonlyArray<{ source: string; text: string }>, threshold = 1): Keyring {
  const keys = new Map<string, PublicKey>();
  for (const { source, text } of keyTexts) {
    let key: PublicKey;
    try {
      key = parsePublicKey(text);
    } catch (e) {
      const err = e as TrustError;
      throw new TrustError(err.code ?? 'KS_KEY_MALFORMED', `${source}: ${err.message}`, source, err.keyId);
    }
    keys.set(keyIdHex(key.keyId), key);
  }
  if (!Number.isInteger(threshold) || threshold < 1)
    throw new TrustError('KS_THRESHOLD_NOT_MET', `the threshold must be a whole number ≥ 1, not ${threshold}`);
  if (threshold > keys.size)
    throw new TrustError(
      'KS_THRESHOLD_NOT_MET',
      `a threshold of ${threshold} needs at least ${threshold} distinct trusted keys; ${keys.size} given`,
    );
  return { keys, threshold };
}
