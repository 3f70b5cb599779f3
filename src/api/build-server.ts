// The agent's HTTP API (SPEC §10) on plain node:http, as a server that never listens by itself (see listenApi): tests
// send requests to the very server the agent runs. Each request goes: path decoded, route found, request guard,
// body read (JSON, or raw bytes for the webhook), handler, one JSON error shape for whatever went wrong.
import { setMaxListeners } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { ownAgentSelf } from './agent-self.js';
import type { ApiDeps } from './api-deps.js';
import type { ApiContext } from './api-context.js';
import { ApiError, toApiError } from './api-error.js';
import { createApiMetrics } from './api-metrics.js';
import { ApiReply } from './api-reply.js';
import { ApiRouter, parseQuery, type ApiRequest } from './api-router.js';
import { defaultDashboardDir, loadDashboardAssets } from './dashboard-assets.js';
import { DashboardSessions } from './dashboard-sessions.js';
import { connectionLimits, limitedHttpServer, type ConnectionLimits } from './connection-limits.js';
import { OperatorWaits } from './operator-waits.js';
import { RefusalLog } from './refusal-log.js';
import { readBody } from './request-body.js';
import { requestGuard } from './request-guard.js';
import { registerApplyRoutes } from './routes/apply-routes.js';
import { registerComponentActions } from './routes/component-actions.js';
import { registerComponentRoutes } from './routes/component-routes.js';
import { registerDashboardRoutes } from './routes/dashboard-routes.js';
import { MAX_EVENT_STREAMS, registerEventRoutes } from './routes/event-routes.js';
import { registerGraphRoutes } from './routes/graph-routes.js';
import { registerHealthRoutes } from './routes/health-routes.js';
import { MAX_LOG_STREAMS, registerLogRoutes } from './routes/log-routes.js';
import { registerMetricsRoutes } from './routes/metrics-routes.js';
import { registerRevisionRoutes } from './routes/revision-routes.js';
import { registerSessionRoutes } from './routes/session-routes.js';
import { registerSyncRoutes } from './routes/sync-routes.js';
import { markSocketRequest } from './socket-request.js';

/** The API's bodies are small JSON objects; anything bigger is a mistake or an attack. */
export const DEFAULT_BODY_LIMIT = 64 * 1024;

export interface ApiServer {
  /** The limits every listener of this server holds to (connection-limits.ts). */
  readonly limits: ConnectionLimits;
  /** An HTTP listener for this server, not yet listening; `viaSocket`: its requests are the Unix socket's. Closed by close(). */
  createListener(viaSocket: boolean): Server;
  /** Connections open on all its listeners now. */
  connections(): Promise<number>;
  /** Answers waiting calls (503), ends streams, stops every listener and the metrics' samplers. */
  close(): Promise<void>;
}

export function buildServer(deps: ApiDeps): ApiServer {
  const now = deps.now ?? Date.now;
  const log = deps.log?.child({ module: 'api' });
  const limits = connectionLimits(deps.limits);
  const bodyLimit = deps.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const waits = new OperatorWaits(deps.agent.events);
  // Every open event or log stream listens for the shutdown: more than node's default of 10 is expected, not a leak.
  setMaxListeners(MAX_EVENT_STREAMS + MAX_LOG_STREAMS + 16, waits.closingSignal);
  const metrics = createApiMetrics(deps.agent);
  const refusals = new RefusalLog({ now, ...(log && { log }), ...deps.refusalLog });
  const ctx: ApiContext = {
    agent: deps.agent,
    waits,
    refusals,
    now,
    startedAt: now(),
    self: deps.self ?? ownAgentSelf(),
    ...(log && { log }),
    ...(deps.webhook && { webhook: deps.webhook }),
    ...(deps.policy && { policy: deps.policy }),
  };

  // The dashboard (on unless --no-dashboard): its sessions, and its built files when there are any.
  const dashboardOn = deps.dashboard !== false;
  const sessions = dashboardOn
    ? new DashboardSessions({ now, ...(typeof deps.dashboard === 'object' && deps.dashboard) })
    : undefined;
  const dashboardDir =
    typeof deps.dashboard === 'object' && deps.dashboard.dir !== undefined ? deps.dashboard.dir : defaultDashboardDir();
  const assets = dashboardOn ? loadDashboardAssets(dashboardDir) : undefined;

  const guard = requestGuard({
    token: deps.token,
    isAllowedHost: deps.isAllowedHost ?? (() => false),
    refusals,
    ...(sessions && { dashboard: { sessions, isPublicAsset: (path: string) => assets?.isPublic(path) ?? false } }),
  });

  const router = new ApiRouter();
  registerComponentRoutes(router, ctx);
  registerComponentActions(router, ctx);
  registerRevisionRoutes(router, ctx);
  registerSyncRoutes(router, ctx);
  registerApplyRoutes(router, ctx);
  registerHealthRoutes(router, ctx);
  registerMetricsRoutes(router, metrics);
  registerEventRoutes(router, ctx);
  registerGraphRoutes(router, ctx);
  registerLogRoutes(router, ctx);
  if (sessions) {
    registerSessionRoutes(router, ctx, sessions, deps.token);
    registerDashboardRoutes(router, assets);
  }

  let closing = false;
  const listeners = new Set<Server>();

  const fail = (err: unknown, req: IncomingMessage, reply: ApiReply) => {
    const e = toApiError(err);
    if (e.code === 'KS_INTERNAL')
      log?.error({ err, method: req.method, path: (req.url ?? '').split('?', 1)[0] }, 'API request failed');
    if (reply.sent) {
      // The answer had begun (a stream): all that is left is to cut it.
      if (!reply.raw.writableEnded) reply.raw.destroy();
      return;
    }
    // What was set for the answer stays (WWW-Authenticate on a 401) except what described the body that is replaced.
    reply.code(e.statusCode).header('content-type', 'application/json; charset=utf-8').send(e.body());
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const reply = new ApiReply(res);
    const url = req.url ?? '/';
    const method = req.method ?? 'GET';
    if (closing) {
      // Like a server that is going away: said plainly, and the connection not kept for another request.
      reply.header('connection', 'close');
      return fail(new ApiError(503, 'KS_SHUTTING_DOWN', 'the agent is shutting down'), req, reply);
    }
    const q = url.indexOf('?');
    const rawPath = q < 0 ? url : url.slice(0, q);
    let path: string;
    try {
      path = decodeURIComponent(rawPath);
    } catch {
      // A malformed %-escape (`/v1/components/%zz`) is refused before the guard, in our error shape (fuzz target api-request).
      return fail(
        new ApiError(
          400,
          'KS_BAD_PATH',
          `the path is not a valid URL: '${rawPath.slice(0, 200)}' is not a valid url component`,
        ),
        req,
        reply,
      );
    }
    const found = router.find(method, path);
    const request: ApiRequest = {
      method,
      url,
      headers: req.headers,
      query: {},
      params: { '*': found?.rest ?? '' },
      body: undefined,
      raw: req,
      route: found?.route.pattern,
    };
    try {
      await guard(request, reply);
      if (!found) throw new ApiError(404, 'KS_NOT_FOUND', `no route ${method} ${rawPath}`);
      request.query = parseQuery(q < 0 ? '' : url.slice(q + 1));
      request.body = await readBody(req, {
        limit: found.route.options.limit ?? bodyLimit,
        ...(found.route.options.raw && { raw: found.route.options.raw }),
      });
      const result = await found.route.handler(request, reply);
      if (!reply.sent && result !== undefined) reply.send(result);
    } catch (err) {
      fail(err, req, reply);
    }
  }

  return {
    limits,
    createListener(viaSocket) {
      const server = limitedHttpServer(limits, (req, res) => {
        if (viaSocket) markSocketRequest(req);
        // An answer that ends after close() began leaves its connection idle: closed then, not kept for its timeout.
        res.once('finish', () => void (closing && setImmediate(() => server.closeIdleConnections())));
        void handle(req, res);
      });
      listeners.add(server);
      return server;
    },
    async connections() {
      const counts = await Promise.all(
        [...listeners].map(
          (l) =>
            new Promise<number>((resolve, reject) => l.getConnections((err, n) => (err ? reject(err) : resolve(n)))),
        ),
      );
      return counts.reduce((a, b) => a + b, 0);
    },
    async close() {
      if (closing) return;
      closing = true;
      // Before the listeners close: calls still waiting answer now instead of holding the agent's exit for their timeout.
      waits.close();
      await Promise.all(
        [...listeners].map(
          (s) =>
            new Promise<void>((resolve) => {
              if (!s.listening) return resolve();
              s.close(() => resolve());
              s.closeIdleConnections();
            }),
        ),
      );
      metrics.close();
      // What is still counted is said now rather than lost with the process.
      refusals.close();
    },
  };
}
