// The API's front door (SPEC §10), run on every request before routing decides anything: no path tricks, only this
// machine's names in Host (DNS rebinding), no foreign Origin (browser CSRF), and a bearer token for everything but
// /healthz and /metrics (reads too: component views carry configuration values, which may be secrets), except
// through the Unix socket, whose file mode already says who may connect. Refusals are logged through a RefusalLog,
// which bounds the lines a client that keeps being refused can cause.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';
import { checkBearer } from './bearer-token.js';
import { GITHUB_WEBHOOK_PATH } from './github-webhook.js';
import { hostnameOfHostHeader, isLoopbackHostname, isLoopbackOrigin } from './loopback.js';
import type { RefusalLog } from './refusal-log.js';
import { isSocketRequest } from './socket-request.js';

export interface RequestGuardOptions {
  token: string;
  /** Host names accepted besides loopback ones (only when the agent listens publicly). */
  isAllowedHost: (hostname: string) => boolean;
  refusals: RefusalLog;
}

/**
 * The only routes open without the token (SPEC §10): a supervisor's liveness probe and the Prometheus scrape, which
 * carry no configuration values. Matched on the route fastify found, so that no query or odd path can widen them.
 */
const OPEN_ROUTES = new Set(['/healthz', '/metrics']);
const READ_METHODS = new Set(['GET', 'HEAD']);

/** Where a request came from, as the refusal log counts it. */
export function sourceOf(request: FastifyRequest): string {
  return isSocketRequest(request.raw) ? 'unix socket' : (request.raw.socket.remoteAddress ?? 'unknown');
}

/** `..` or `.` as a segment, a backslash, or an encoded dot, slash, backslash or NUL: refused before any routing. */
function isSuspiciousPath(rawUrl: string): boolean {
  const path = rawUrl.split('?', 1)[0]!;
  if (/%(2e|2f|5c|00)/i.test(path) || path.includes('\\')) return true;
  return path.split('/').some((seg) => seg === '.' || seg === '..');
}

export function requestGuard(opts: RequestGuardOptions) {
  return async function guard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const refuse = (err: ApiError): never => {
      opts.refusals.refused(sourceOf(request), err.code, { method: request.method, path: request.url.split('?', 1)[0], host: request.headers.host, origin: request.headers.origin }, 'API request refused');
      throw err;
    };
    if (isSuspiciousPath(request.raw.url ?? '')) refuse(new ApiError(400, 'KS_BAD_PATH', 'paths may not contain dot segments, backslashes or encoded dots, slashes or NULs'));

    const viaSocket = isSocketRequest(request.raw);
    // The GitHub webhook authenticates itself: its handler checks an HMAC of the body under a secret shared with
    // GitHub, which cannot send our bearer token. It arrives through whatever public name, proxy or tunnel points at
    // the device, so its Host is not one of ours either. Both checks can be waived for it alone: a rebound page or a
    // forged request cannot compute the HMAC without the secret. Origin is still checked below: GitHub sends none, and
    // no browser page has any business here. Matched on the route fastify found, so a query or odd path cannot widen it.
    const hmacAuthenticated = request.method === 'POST' && request.routeOptions.url === GITHUB_WEBHOOK_PATH;
    // A page on evil.example whose name was rebound to 127.0.0.1 still sends `Host: evil.example`.
    if (!viaSocket && !hmacAuthenticated) {
      const header = request.headers.host;
      const hostname = header === undefined ? undefined : hostnameOfHostHeader(header);
      if (hostname === undefined || !(isLoopbackHostname(hostname) || opts.isAllowedHost(hostname)))
        refuse(new ApiError(403, 'KS_FOREIGN_HOST', `requests must be addressed to this machine (Host ${JSON.stringify(header ?? '')} is not one of its names)`));
    }
    // Browsers send Origin on cross-origin requests (and on every POST); Sec-Fetch-Site covers those that do not.
    const origin = request.headers.origin;
    if (origin !== undefined && !isLoopbackOrigin(origin)) refuse(new ApiError(403, 'KS_FOREIGN_ORIGIN', `requests from web pages of other origins are refused (Origin ${JSON.stringify(origin)})`));
    if (request.headers['sec-fetch-site'] === 'cross-site') refuse(new ApiError(403, 'KS_FOREIGN_ORIGIN', 'requests from web pages of other sites are refused'));

    const open = READ_METHODS.has(request.method) && OPEN_ROUTES.has(request.routeOptions.url ?? '');
    if (open || viaSocket || hmacAuthenticated) return;
    // Everything else, unknown paths included: a client without the token learns nothing, not even which routes exist.
    const check = checkBearer(request.headers.authorization, opts.token);
    if (check === 'ok') return;
    reply.header('www-authenticate', 'Bearer realm="keystone"');
    if (check === 'missing')
      refuse(new ApiError(401, 'KS_TOKEN_MISSING', 'the API needs a token (only /healthz and /metrics are open): send Authorization: Bearer <token>, the token being in <state-dir>/api-token'));
    refuse(new ApiError(401, 'KS_TOKEN_INVALID', 'the bearer token is not the one in <state-dir>/api-token'));
  };
}
