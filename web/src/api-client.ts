// Every request the page makes goes through here: the session cookie rides along (same origin) and the session's CSRF
// token is sent in a header, which is what lets the API accept the cookie in place of a bearer token.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

let sessionEnded: (() => void) | undefined;

/** Who to tell when a call answers 401: the session is gone and the login form has to come back. */
export function onSessionEnded(handler: () => void): void {
  sessionEnded = handler;
}

/**
 * The CSRF token lives in this origin's localStorage, never in a cookie: cookies are the host's, so a component's own
 * page on another loopback port could read or replace one, while storage is this origin's alone (scheme, host and
 * port). localStorage rather than memory, so that a reload or a second tab stays signed in as the cookie does.
 */
const CSRF_KEY = 'keystone.csrf';
/** Where storage is refused (some private modes): this page only. */
let csrfInMemory = '';

export function csrfToken(): string {
  try {
    return localStorage.getItem(CSRF_KEY) ?? '';
  } catch {
    return csrfInMemory;
  }
}

/** Keeps the token the sign-in answered with; '' forgets it (signing out). */
export function setCsrfToken(token: string): void {
  csrfInMemory = token;
  try {
    if (token) localStorage.setItem(CSRF_KEY, token);
    else localStorage.removeItem(CSRF_KEY);
  } catch {
    // Kept in memory only.
  }
}

/** `gateway/reports` stays a path (the API's routes take the slash); each segment is escaped on its own. */
export const componentPath = (name: string): string =>
  `/v1/components/${name.split('/').map(encodeURIComponent).join('/')}`;

async function errorOf(res: Response): Promise<ApiError> {
  let body: Record<string, unknown> = {};
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    // A proxy's HTML page or an empty body: the status line is all there is to show.
  }
  const err = body.error as { code?: string; message?: string } | undefined;
  return new ApiError(
    res.status,
    err?.code ?? `HTTP_${res.status}`,
    err?.message ?? `${res.status} ${res.statusText || 'error'}`,
    body,
  );
}

export interface RequestOptions extends RequestInit {
  /** The session calls answer 401 as an answer, not as the end of the session. */
  expect401?: boolean;
}

export async function request(path: string, options: RequestOptions = {}): Promise<Response> {
  const { expect401, ...init } = options;
  const headers = new Headers(init.headers);
  const csrf = csrfToken();
  if (csrf) headers.set('X-Keystone-CSRF', csrf);
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers, credentials: 'same-origin', cache: 'no-store' });
  } catch (e) {
    if (init.signal?.aborted) throw e;
    throw new ApiError(0, 'KS_UNREACHABLE', 'cannot reach the agent (is it running?)');
  }
  if (res.ok) return res;
  const error = await errorOf(res);
  if (res.status === 401 && !expect401) sessionEnded?.();
  throw error;
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const res = await request(path, options);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
