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
  const sent = createHash('sha256').update(m[1]!).digest();
  const want = createHash('sha256').update(token).digest();
  return timingSafeEqual(sent, want) ? 'ok' : 'invalid';
}
