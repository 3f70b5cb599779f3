// `Authorization: Bearer <token>` checked in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';

export type BearerCheck = 'ok' | 'missing' | 'invalid';

/**
 * Compares digests rather than the strings: timingSafeEqual needs equal lengths, and comparing lengths first would
 * tell an attacker the token's length. Hashing both sides makes the comparison independent of what was sent.
 */
export function checkBearer(header: string | undefined, token: string): BearerCheck {
  if (header === undefined || header === '') return 'missing';
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!m) return 'invalid';
  return sameSecret(m[1]!, token) ? 'ok' : 'invalid';
}

/** `sent` equals `secret`, compared in constant time whatever the lengths (the token, a session's CSRF token). */
export function sameSecret(sent: string, secret: string): boolean {
  return timingSafeEqual(createHash('sha256').update(sent).digest(), createHash('sha256').update(secret).digest());
}
