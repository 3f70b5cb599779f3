// The cookie session: exchanged once for the API token, which the page never keeps. The answer carries the session's
// CSRF token, kept by api-client.ts in this origin's storage.
import { api, ApiError, setCsrfToken } from './api-client.js';

export interface Session {
  expiresAt: string;
}

/** The session the cookies carry, or null when there is none (or it expired). */
export async function currentSession(): Promise<Session | null> {
  try {
    return await api<Session>('/v1/session', { expect401: true });
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

export async function signIn(token: string): Promise<Session> {
  const { expiresAt, csrf } = await api<Session & { csrf: string }>('/v1/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
    expect401: true,
  });
  setCsrfToken(csrf);
  return { expiresAt };
}

export async function signOut(): Promise<void> {
  try {
    await api<void>('/v1/session', { method: 'DELETE', expect401: true });
  } finally {
    setCsrfToken('');
  }
}
