// The keyed digest of a secret's value (SPEC §16): what a component's hash takes instead of the value, so that a new
// value restarts exactly its readers and a re-encryption restarts nothing. Keyed by the device's own age identity: the
// digest (kept in the state store, shown nowhere) cannot be tried against guessed passwords without the device's key.
import { createHmac } from 'node:crypto';

const CONTEXT = 'keystone secret digest v1';

/** The device's digest key, derived from its age identity (`AGE-SECRET-KEY-1…`); held in memory only. */
export function digestKeyOf(ageIdentity: string): Buffer {
  return createHmac('sha256', CONTEXT).update(ageIdentity).digest();
}

/** 64 hex digits: HMAC-SHA256 of the value under the device's digest key. */
export function secretDigest(key: Uint8Array, value: Uint8Array): string {
  return createHmac('sha256', key).update(value).digest('hex');
}
