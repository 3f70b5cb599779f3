// The dashboard's sessions (SPEC §10): the page exchanges the API token once for a session cookie, so the token never
// has to sit in the browser's storage. A session is accepted in the token's place only together with its CSRF token
// in a header (X-Keystone-CSRF), which a page of another origin cannot send without a CORS preflight the API never
// grants. Sessions live in the agent's memory: a restart of the agent signs every browser out, which is the safe side.
//
// Cookies belong to a host, not to an origin: a component's own web page on another loopback port shares the jar
// (issue 28, finding 8). So the CSRF token is never a cookie (the sign-in answer hands it to the page, which keeps it
// in its origin's storage), and a request may carry several session cookies (one planted with `Path=/v1` is sent
// before the operator's own): each is tried, and only a current session whose CSRF token came in the header counts.
import { createHash, randomBytes } from 'node:crypto';
import { parse, serialize, type SerializeOptions } from 'cookie';
import { sameSecret } from './bearer-token.js';
import { httpDate } from '../core/iso-time.js';

export const SESSION_COOKIE = 'keystone_session';
/**
 * Over https the session cookie takes the `__Host-` prefix: the browser then refuses it from any page that is not
 * https, with a Domain or a path other than `/`. Not over plain http: not every browser takes a Secure cookie from
 * http://127.0.0.1 (Chromium does, and then lets every other loopback port set the same `__Host-` cookie anyway).
 */
export const SECURE_SESSION_COOKIE = '__Host-keystone_session';
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
  | { ok: true; session: DashboardSession; id: string }
  | {
      ok: false;
      code: 'KS_SESSION_INVALID' | 'KS_SESSION_EXPIRED' | 'KS_CSRF_MISSING' | 'KS_CSRF_INVALID';
      message: string;
    };

export interface DashboardSessionsOptions {
  now: () => number;
  /** Random bytes (tests pass a seeded source). */
  random?: (n: number) => Buffer;
  ttlMs?: number;
  maxSessions?: number;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The refusals of checkAny, from the least to the most telling. */
const CLOSENESS: ReadonlyArray<Extract<SessionCheck, { ok: false }>['code']> = [
  'KS_SESSION_INVALID',
  'KS_SESSION_EXPIRED',
  'KS_CSRF_MISSING',
  'KS_CSRF_INVALID',
];

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
    if (!entry)
      return {
        ok: false,
        code: 'KS_SESSION_INVALID',
        message:
          'the dashboard session is not known to this agent (it restarted, or the session was signed out): sign in again',
      };
    if (entry.expiresAt <= this.opts.now()) {
      this.entries.delete(key);
      return { ok: false, code: 'KS_SESSION_EXPIRED', message: 'the dashboard session has expired: sign in again' };
    }
    if (csrf === undefined || csrf === '')
      return {
        ok: false,
        code: 'KS_CSRF_MISSING',
        message: `a dashboard session is accepted only with its ${CSRF_HEADER} header`,
      };
    if (!sameSecret(csrf, entry.csrf))
      return { ok: false, code: 'KS_CSRF_INVALID', message: `the ${CSRF_HEADER} header is not this session's` };
    return { ok: true, session: { expiresAt: entry.expiresAt }, id };
  }

  /**
   * The one of several session cookies that is a current session with `csrf` as its token: cookies another port
   * planted are passed over, not taken for the operator's. When none is, the refusal of the cookie that came
   * closest (a known session without its header says more than an unknown id).
   */
  checkAny(ids: readonly string[], csrf: string | undefined): SessionCheck {
    let closest: Extract<SessionCheck, { ok: false }> | undefined;
    for (const id of ids) {
      const check = this.check(id, csrf);
      if (check.ok) return check;
      if (!closest || CLOSENESS.indexOf(check.code) > CLOSENESS.indexOf(closest.code)) closest = check;
    }
    return closest ?? { ok: false, code: 'KS_SESSION_INVALID', message: 'no dashboard session: sign in again' };
  }

  /** A current session among `ids`, for the page's own assets (a browser loads scripts without custom headers; they carry no data). */
  current(ids: readonly string[]): boolean {
    return ids.some((id) => {
      const entry = this.entries.get(digest(id).toString('hex'));
      return entry !== undefined && entry.expiresAt > this.opts.now();
    });
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

/**
 * Every session cookie's value in a Cookie header, in the order sent, either name. A browser sends one cookie per name
 * and path, so a page on another port that planted its own adds values rather than replacing the operator's; all are
 * kept (the header's size, which Node bounds, bounds them).
 */
export function sessionIdsOf(cookieHeader: string | undefined): string[] {
  if (!cookieHeader) return [];
  const ids: string[] = [];
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name !== SESSION_COOKIE && name !== SECURE_SESSION_COOKIE) continue;
    // The value as the cookie library reads it: quotes and percent-escapes undone where they are well formed.
    const value = parse(`v=${part.slice(eq + 1).trim()}`).v;
    if (value !== undefined && value !== '' && !ids.includes(value)) ids.push(value);
  }
  return ids;
}

/**
 * The Set-Cookie value of a new session: HttpOnly (scripts never see it), SameSite=Strict (no other site's page makes
 * the browser send it), with the session's lifetime. Over https `__Host-` and Secure; the agent itself speaks plain
 * HTTP, on loopback or behind a tunnel or proxy. The CSRF token goes in the sign-in answer's body, never in a cookie.
 */
export function sessionCookies(s: { id: string }, maxAgeMs: number, secure: boolean): string[] {
  const options: SerializeOptions = {
    path: '/',
    sameSite: 'strict',
    maxAge: Math.floor(maxAgeMs / 1000),
    secure,
    httpOnly: true,
  };
  return [serialize(secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE, s.id, options)];
}

/**
 * The Set-Cookie value that ends a session: Max-Age=0, and an Expires in the past for older clients, spelled by
 * httpDate (the cookie library formats a Date through toUTCString, which loads the time zone: core/iso-time.ts).
 */
export function clearedCookies(secure: boolean): string[] {
  const head = serialize(secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE, '', { maxAge: 0, path: '/' });
  return [`${head}; Expires=${httpDate(0)}; HttpOnly${secure ? '; Secure' : ''}; SameSite=Strict`];
}
