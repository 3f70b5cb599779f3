// POST /v1/session (the token for a session cookie), GET /v1/session (is this browser signed in), DELETE /v1/session
// (sign out): the dashboard's access (SPEC §10). The token is checked here, in the body, never kept by the browser.
import type { ApiRouter, ApiRequest } from '../api-router.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { sameSecret } from '../bearer-token.js';
import { clearedCookies, sessionCookies, type DashboardSessions } from '../dashboard-sessions.js';
import { dashboardSessionIdOf, dashboardSessionOf, SESSION_PATH, sourceOf } from '../request-guard.js';
import { strictQuery } from '../query-params.js';
import { isoTime } from '../../core/iso-time.js';

/** Secure cookies when the page came over https: the agent serves plain http, so a TLS proxy in front of it says so in X-Forwarded-Proto. */
const overHttps = (request: ApiRequest) => request.headers['x-forwarded-proto'] === 'https';

export function registerSessionRoutes(
  server: ApiRouter,
  ctx: ApiContext,
  sessions: DashboardSessions,
  token: string,
): void {
  server.post(SESSION_PATH, async (request, reply) => {
    strictQuery(request.query, []);
    const body = request.body;
    const sent =
      body !== null && typeof body === 'object' && !Array.isArray(body)
        ? (body as Record<string, unknown>).token
        : undefined;
    if (typeof sent !== 'string' || sent === '')
      throw new ApiError(400, 'KS_BAD_BODY', 'send {"token": "<the content of <state-dir>/api-token>"} as JSON');
    // The same constant-time comparison as the Authorization header's.
    if (!sameSecret(sent.trim(), token)) {
      ctx.refusals.refused(
        sourceOf(request),
        'KS_TOKEN_INVALID',
        { method: 'POST', path: SESSION_PATH },
        'dashboard sign-in refused',
      );
      throw new ApiError(401, 'KS_TOKEN_INVALID', 'that is not the token in <state-dir>/api-token');
    }
    const s = sessions.create();
    ctx.log?.info(
      { source: sourceOf(request), sessions: sessions.size, expires: isoTime(s.expiresAt) },
      'dashboard session started',
    );
    // The CSRF token in the body, for the page to keep in its own origin's storage: a cookie would be every port's.
    return reply
      .header('set-cookie', sessionCookies(s, sessions.ttlMs, overHttps(request)))
      .send({ expiresAt: isoTime(s.expiresAt), csrf: s.csrf });
  });

  server.get(SESSION_PATH, async (request) => {
    strictQuery(request.query, []);
    const s = dashboardSessionOf(request);
    // A bearer-token client is signed in too, without an expiry of its own.
    return { expiresAt: s ? isoTime(s.expiresAt) : null };
  });

  server.delete(SESSION_PATH, async (request, reply) => {
    strictQuery(request.query, []);
    // The session the guard let this request in with, not whichever cookie came first.
    const id = dashboardSessionIdOf(request);
    if (id !== undefined) sessions.end(id);
    return reply
      .code(204)
      .header('set-cookie', clearedCookies(overHttps(request)))
      .send();
  });
}
