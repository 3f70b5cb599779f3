// The API's front door (SPEC §10), run on every request before routing decides anything: no path tricks, only this
// machine's names in Host (DNS rebinding), no foreign Origin (browser CSRF), and a bearer token for everything but
// /healthz and /metrics (reads too: component views carry configuration values, which may be secrets), except
// through the Unix socket, whose file mode already says who may connect. Refusals are logged through a RefusalLog,
// which bounds the lines a client that keeps being refused can cause. The dashboard's session cookie stands in for the
// token only with its CSRF header and from the page's own origin (dashboard-sessions.ts).
import { ApiError } from './api-error.js';
import type { ApiReply } from './api-reply.js';
import type { ApiRequest } from './api-router.js';
import { checkBearer } from './bearer-token.js';
import { CSRF_HEADER, sessionIdsOf, type DashboardSession, type DashboardSessions } from './dashboard-sessions.js';
import { GITHUB_WEBHOOK_PATH } from './github-webhook.js';
import { hostnameOfHostHeader, isLoopbackHostname, isLoopbackOrigin } from './loopback.js';
import type { RefusalLog } from './refusal-log.js';
import { isSocketRequest } from './socket-request.js';

export interface RequestGuardOptions {
  token: string;
  /** Host names accepted besides loopback ones (only when the agent listens publicly). */
  isAllowedHost: (hostname: string) => boolean;
  refusals: RefusalLog;
  /** The dashboard's sessions and which of its asset paths are open; absent when the dashboard is off. */
  dashboard?: {
    sessions: DashboardSessions;
    /** The login page and what it loads before a session exists (the page's code, no device data). */
    isPublicAsset(path: string): boolean;
  };
}

/** The routes of the page's own files (dashboard-routes.ts). */
const ASSET_ROUTES = new Set(['/', '/index.html', '/assets/*']);
export const SESSION_PATH = '/v1/session';

/** The dashboard session a request was let in with (GET /v1/session answers its expiry; DELETE ends that one). */
const sessionsOfRequests = new WeakMap<ApiRequest, { session: DashboardSession; id: string }>();
export const dashboardSessionOf = (request: ApiRequest): DashboardSession | undefined =>
  sessionsOfRequests.get(request)?.session;
export const dashboardSessionIdOf = (request: ApiRequest): string | undefined => sessionsOfRequests.get(request)?.id;

/** The page's own origin: the scheme-less `host:port` of Origin is exactly the request's Host (already checked as ours). */
function isSameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    const url = new URL(origin);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') && url.host.toLowerCase() === host.trim().toLowerCase()
    );
  } catch {
    return false;
  }
}

/**
 * The only routes open without the token (SPEC §10): a supervisor's liveness probe and the Prometheus scrape, which
 * carry no configuration values. Matched on the route the router found, so that no query or odd path can widen them.
 */
const OPEN_ROUTES = new Set(['/healthz', '/metrics']);
const READ_METHODS = new Set(['GET', 'HEAD']);

/** Where a request came from, as the refusal log counts it. */
export function sourceOf(request: ApiRequest): string {
  return isSocketRequest(request.raw) ? 'unix socket' : (request.raw.socket.remoteAddress ?? 'unknown');
}

/** `..` or `.` as a segment, a backslash, or an encoded dot, slash, backslash or NUL: refused before any routing. */
function isSuspiciousPath(rawUrl: string): boolean {
  const path = rawUrl.split('?', 1)[0]!;
  if (/%(2e|2f|5c|00)/i.test(path) || path.includes('\\')) return true;
  return path.split('/').some((seg) => seg === '.' || seg === '..');
}

export function requestGuard(opts: RequestGuardOptions) {
  return async function guard(request: ApiRequest, reply: ApiReply): Promise<void> {
    const refuse = (err: ApiError): never => {
      opts.refusals.refused(
        sourceOf(request),
        err.code,
        {
          method: request.method,
          path: request.url.split('?', 1)[0],
          host: request.headers.host,
          origin: request.headers.origin,
        },
        'API request refused',
      );
      throw err;
    };
    if (isSuspiciousPath(request.raw.url ?? ''))
      refuse(
        new ApiError(
          400,
          'KS_BAD_PATH',
          'paths may not contain dot segments, backslashes or encoded dots, slashes or NULs',
        ),
      );

    const viaSocket = isSocketRequest(request.raw);
    // The GitHub webhook authenticates itself: its handler checks an HMAC of the body under a secret shared with
    // GitHub, which cannot send our bearer token. It arrives through whatever public name, proxy or tunnel points at
    // the device, so its Host is not one of ours either. Both checks can be waived for it alone: a rebound page or a
    // forged request cannot compute the HMAC without the secret. Origin is still checked below: GitHub sends none, and
    // no browser page has any business here. Matched on the route the router found, so a query or odd path cannot widen it.
    const hmacAuthenticated = request.method === 'POST' && request.route === GITHUB_WEBHOOK_PATH;
    // A page on evil.example whose name was rebound to 127.0.0.1 still sends `Host: evil.example`.
    if (!viaSocket && !hmacAuthenticated) {
      const header = request.headers.host;
      const hostname = header === undefined ? undefined : hostnameOfHostHeader(header);
      if (hostname === undefined || !(isLoopbackHostname(hostname) || opts.isAllowedHost(hostname)))
        refuse(
          new ApiError(
            403,
            'KS_FOREIGN_HOST',
            `requests must be addressed to this machine (Host ${JSON.stringify(header ?? '')} is not one of its names)`,
          ),
        );
    }
    // Browsers send Origin on cross-origin requests (and on every POST); Sec-Fetch-Site covers those that do not.
    // The dashboard's own origin is allowed too when the API listens publicly (http://device:8080 is not loopback): its
    // Host passed the check above. Not for the webhook, whose Host is not checked: no page has business there.
    const origin = request.headers.origin;
    if (
      origin !== undefined &&
      !isLoopbackOrigin(origin) &&
      !(!viaSocket && !hmacAuthenticated && isSameOrigin(origin, request.headers.host))
    )
      refuse(
        new ApiError(
          403,
          'KS_FOREIGN_ORIGIN',
          `requests from web pages of other origins are refused (Origin ${JSON.stringify(origin)})`,
        ),
      );
    if (request.headers['sec-fetch-site'] === 'cross-site')
      refuse(new ApiError(403, 'KS_FOREIGN_ORIGIN', 'requests from web pages of other sites are refused'));

    const route = request.route ?? '';
    const open = READ_METHODS.has(request.method) && OPEN_ROUTES.has(route);
    if (open || viaSocket || hmacAuthenticated) return;

    const dashboard = opts.dashboard;
    if (dashboard && READ_METHODS.has(request.method) && ASSET_ROUTES.has(route)) {
      const path = request.url.split('?', 1)[0]!;
      // The rest of the page's code only after sign-in; a browser loads scripts with cookies but no custom header.
      if (dashboard.isPublicAsset(path) || dashboard.sessions.current(sessionIdsOf(request.headers.cookie))) return;
      refuse(new ApiError(401, 'KS_SESSION_MISSING', 'sign in to the dashboard first (at /)'));
    }
    // Signing in: the route checks the token in the body (a JSON body: a foreign page cannot send one without a preflight).
    if (dashboard && request.method === 'POST' && route === SESSION_PATH) return;
    // A session stands in for the token only from the page itself: its exact origin (not any loopback port: a
    // component's own web page on 127.0.0.1:18088 shares the cookie jar) and with the CSRF header. That page may have
    // planted session cookies of its own beside the operator's: the one that is a session with this header counts.
    const sessionIds =
      dashboard && request.headers.authorization === undefined ? sessionIdsOf(request.headers.cookie) : [];
    if (dashboard && sessionIds.length > 0) {
      const site = request.headers['sec-fetch-site'];
      if (
        (origin !== undefined && !isSameOrigin(origin, request.headers.host)) ||
        (site !== undefined && site !== 'same-origin' && site !== 'none')
      )
        refuse(
          new ApiError(
            403,
            'KS_FOREIGN_ORIGIN',
            "a dashboard session is accepted only from the dashboard's own origin",
          ),
        );
      const csrf = request.headers[CSRF_HEADER];
      const check = dashboard.sessions.checkAny(sessionIds, typeof csrf === 'string' ? csrf : undefined);
      if (check.ok) {
        sessionsOfRequests.set(request, { session: check.session, id: check.id });
        return;
      }
      refuse(new ApiError(401, check.code, check.message));
    }
    // Everything else, unknown paths included: a client without the token learns nothing, not even which routes exist.
    const check = checkBearer(request.headers.authorization, opts.token);
    if (check === 'ok') return;
    reply.header('www-authenticate', 'Bearer realm="keystone"');
    if (check === 'missing')
      refuse(
        new ApiError(
          401,
          'KS_TOKEN_MISSING',
          'the API needs a token (only /healthz and /metrics are open): send Authorization: Bearer <token>, the token being in <state-dir>/api-token',
        ),
      );
    refuse(new ApiError(401, 'KS_TOKEN_INVALID', 'the bearer token is not the one in <state-dir>/api-token'));
  };
}
