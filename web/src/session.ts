// The cookie session: exchanged once for the API token, which the page never keeps.
import { api, ApiError } from './api-client.js';

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

export const signIn = (token: string): Promise<Session> =>
  api<Session>('/v1/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
    expect401: true,
  });

export const signOut = (): Promise<void> => api<void>('/v1/session', { method: 'DELETE', expect401: true });
