// The dashboard's sessions (SPEC §10): the page exchanges the API token once for a session cookie, so the token never
// has to sit in the browser's storage. A session is accepted in the token's place only together with its CSRF token
// in a header (X-Keystone-CSRF), which a page of another origin cannot send without a CORS preflight the API never
// grants. Sessions live in the agent's memory: a restart of the agent signs every browser out, which is the safe side.
import { createHash, randomBytes } from 'node:crypto';
import { parse, serialize, type SerializeOptions } from 'cookie';
import { sameSecret } from './bearer-token.js';

export const SESSION_COOKIE = 'keystone_session';
export const CSRF_COOKIE = 'keystone_csrf';
export const CSRF_HEADER = 'x-keystone-csrf';

/** 8 hours: a technician's shift; after it the page asks for the token again. */
export const DEFAULT_SESSION_TTL_MS = 8 * 3600_000;
/** More browsers than a device has technicians; the oldest session goes first beyond it. */
export const DEFAULT_MAX_SESSIONS = 32;

export interface DashboardSession {
  /** ms */
  expiresAt: number;
}

interface Entry extends DashboardSession {
  csrf: string;
}

export type SessionCheck =
  | { ok: true; session: DashboardSession }
  | { ok: false; code: 'KS_SESSION_INVALID' | 'KS_SESSION_EXPIRED' | 'KS_CSRF_MISSING' | 'KS_CSRF_INVALID'; message: string };

export interface DashboardSessionsOptions {
  now: () => number;
  /** Random bytes (tests pass a seeded source). */
  random?: (n: number) => Buffer;
  ttlMs?: number;
  maxSessions?: number;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export class DashboardSessions {
  /** By the sha256 of the session id: the ids themselves are kept nowhere but in the browsers' cookies. */
  private readonly entries = new Map<string, Entry>();
  private readonly random: (n: number) => Buffer;
  readonly ttlMs: number;
  private readonly max: number;

  constructor(private readonly opts: DashboardSessionsOptions) {
    this.random = opts.random ?? randomBytes;
    this.ttlMs = opts.ttlMs ?? DEFAULT_SESSION_TTL_MS;
    this.max = opts.maxSessions ?? DEFAULT_MAX_SESSIONS;
  }

  /** A new session: its id (for the HttpOnly cookie), its CSRF token (for the page) and when it expires. */
  create(): { id: string; csrf: string; expiresAt: number } {
    this.sweep();
    while (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    const id = this.random(32).toString('base64url');
    const csrf = this.random(32).toString('base64url');
    const expiresAt = this.opts.now() + this.ttlMs;
    this.entries.set(digest(id).toString('hex'), { expiresAt, csrf });
    return { id, csrf, expiresAt };
  }

  /** The session `id` names, if it is current and `csrf` is its CSRF token. */
  check(id: string, csrf: string | undefined): SessionCheck {
    const key = digest(id).toString('hex');
    const entry = this.entries.get(key);
    if (!entry) return { ok: false, code: 'KS_SESSION_INVALID', message: 'the dashboard session is not known to this agent (it restarted, or the session was signed out): sign in again' };
    if (entry.expiresAt <= this.opts.now()) {
      this.entries.delete(key);
      return { ok: false, code: 'KS_SESSION_EXPIRED', message: 'the dashboard session has expired: sign in again' };
    }
    if (csrf === undefined || csrf === '') return { ok: false, code: 'KS_CSRF_MISSING', message: `a dashboard session is accepted only with its ${CSRF_HEADER} header` };
    if (!sameSecret(csrf, entry.csrf)) return { ok: false, code: 'KS_CSRF_INVALID', message: `the ${CSRF_HEADER} header is not this session's` };
    return { ok: true, session: { expiresAt: entry.expiresAt } };
  }

  /** A current session, for the page's own assets (a browser loads scripts without custom headers; they carry no data). */
  current(id: string): boolean {
    const entry = this.entries.get(digest(id).toString('hex'));
    return entry !== undefined && entry.expiresAt > this.opts.now();
  }

  end(id: string): void {
    this.entries.delete(digest(id).toString('hex'));
  }

  get size(): number {
    return this.entries.size;
  }

  private sweep(): void {
    const now = this.opts.now();
    for (const [k, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(k);
  }
}

/** The session cookie's value in a Cookie header, if any. */
export function sessionIdOf(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  const v = parse(cookieHeader)[SESSION_COOKIE];
  return v === undefined || v === '' ? undefined : v;
}

/**
 * The two Set-Cookie values of a new session: the id HttpOnly (scripts never see it), the CSRF token readable by the
 * page (it echoes it in the header). Both SameSite=Strict: no other site's page makes the browser send them. Secure
 * only when the page came over https (the agent itself speaks plain HTTP, on loopback or behind a tunnel or proxy).
 */
export function sessionCookies(s: { id: string; csrf: string }, maxAgeMs: number, secure: boolean): string[] {
  const base: SerializeOptions = { path: '/', sameSite: 'strict', maxAge: Math.floor(maxAgeMs / 1000), secure };
  return [serialize(SESSION_COOKIE, s.id, { ...base, httpOnly: true }), serialize(CSRF_COOKIE, s.csrf, base)];
}

export function clearedCookies(secure: boolean): string[] {
  const base: SerializeOptions = { path: '/', sameSite: 'strict', maxAge: 0, expires: new Date(0), secure };
  return [serialize(SESSION_COOKIE, '', { ...base, httpOnly: true }), serialize(CSRF_COOKIE, '', base)];
}
