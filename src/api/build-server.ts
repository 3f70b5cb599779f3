// The agent's HTTP API (SPEC §10) as a fastify instance that never listens by itself (see listenApi): tests inject
// requests into the very server the agent runs.
import { setMaxListeners } from 'node:events';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import { ownAgentSelf } from './agent-self.js';
import type { ApiDeps } from './api-deps.js';
import type { ApiContext } from './api-context.js';
import { ApiError, fromFastifyError } from './api-error.js';
import { createApiMetrics } from './api-metrics.js';
import { defaultDashboardDir, loadDashboardAssets } from './dashboard-assets.js';
import { DashboardSessions } from './dashboard-sessions.js';
import { connectionLimits, limitedHttpServer, type ConnectionLimits } from './connection-limits.js';
import { OperatorWaits } from './operator-waits.js';
import { RefusalLog } from './refusal-log.js';
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

/**
 * The API's routes declare no JSON schemas (each checks its input itself), and fastify is told so: it then never
 * loads ajv and fast-json-stringify, its default compilers, which the package's bundle leaves out (packaging/bundle.mjs).
 * A route that declared a schema would fail when registered, here and in the tests.
 */
function noSchemas(): never {
  throw new Error('the agent API declares no JSON schemas: a route checks its input itself');
}

/** The API's bodies are small JSON objects; anything bigger is a mistake or an attack. */
export const DEFAULT_BODY_LIMIT = 64 * 1024;

/** The limits each built server runs with, for listenApi's Unix socket, which must hold to the same. */
const limitsOfServer = new WeakMap<FastifyInstance, ConnectionLimits>();

export function connectionLimitsOf(server: FastifyInstance): ConnectionLimits {
  return limitsOfServer.get(server) ?? connectionLimits();
}

export function buildServer(deps: ApiDeps): FastifyInstance {
  const now = deps.now ?? Date.now;
  const log = deps.log?.child({ module: 'api' });
  const limits = connectionLimits(deps.limits);
  const server = Fastify({
    // Every TCP listener (fastify makes one per address of a name such as localhost) with the connection limits.
    serverFactory: (handler) => limitedHttpServer(limits, handler),
    bodyLimit: deps.bodyLimit ?? DEFAULT_BODY_LIMIT,
    // Our own lines only: fastify's per-request logs would flood a device's log with every Prometheus scrape.
    logger: false,
    // Names are at most 63 characters; `{name}:restart` fits with room to spare.
    routerOptions: { maxParamLength: 128 },
    schemaController: { compilersFactory: { buildValidator: noSchemas, buildSerializer: noSchemas } },
    // A path the router cannot decode (a malformed %-escape: `/v1/components/%zz`) is refused before any hook runs;
    // it gets our error shape and code, not fastify's own body (found by the api-request fuzz target).
    frameworkErrors: (e, _request, reply) => {
      void (reply as FastifyReply).code(400).send(new ApiError(400, 'KS_BAD_PATH', `the path is not a valid URL: ${e.message}`).body());
    },
  });
  // JSON is the only body type: text/plain is what a browser form can send cross-origin without a preflight.
  server.removeContentTypeParser('text/plain');

  limitsOfServer.set(server, limits);
  const waits = new OperatorWaits(deps.agent.events);
  // Every open event or log stream listens for the shutdown: more than node's default of 10 is expected, not a leak.
  setMaxListeners(MAX_EVENT_STREAMS + MAX_LOG_STREAMS + 16, waits.closingSignal);
  const metrics = createApiMetrics(deps.agent);
  const refusals = new RefusalLog({ now, ...(log && { log }), ...deps.refusalLog });
  const ctx: ApiContext = { agent: deps.agent, waits, refusals, now, startedAt: now(), self: deps.self ?? ownAgentSelf(), ...(log && { log }), ...(deps.webhook && { webhook: deps.webhook }), ...(deps.policy && { policy: deps.policy }) };

  // The dashboard (on unless --no-dashboard): its sessions, and its built files when there are any.
  const dashboardOn = deps.dashboard !== false;
  const sessions = dashboardOn ? new DashboardSessions({ now, ...(typeof deps.dashboard === 'object' && deps.dashboard) }) : undefined;
  const dashboardDir = typeof deps.dashboard === 'object' && deps.dashboard.dir !== undefined ? deps.dashboard.dir : defaultDashboardDir();
  const assets = dashboardOn ? loadDashboardAssets(dashboardDir) : undefined;

  server.addHook(
    'onRequest',
    requestGuard({
      token: deps.token,
      isAllowedHost: deps.isAllowedHost ?? (() => false),
      refusals,
      ...(sessions && { dashboard: { sessions, isPublicAsset: (path: string) => assets?.isPublic(path) ?? false } }),
    }),
  );
  server.addHook('onSend', async (_request, reply) => {
    // Answers describe this device at one moment: never cached (the dashboard's hashed files say otherwise themselves),
    // never sniffed as something else.
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
  });
  server.setErrorHandler((err: FastifyError, request, reply) => {
    const e = fromFastifyError(err);
    if (e.code === 'KS_INTERNAL') log?.error({ err, method: request.method, path: request.url.split('?', 1)[0] }, 'API request failed');
    return reply.code(e.statusCode).send(e.body());
  });
  server.setNotFoundHandler((request, reply) => {
    const e = new ApiError(404, 'KS_NOT_FOUND', `no route ${request.method} ${request.url.split('?', 1)[0]}`);
    return reply.code(404).send(e.body());
  });

  registerComponentRoutes(server, ctx);
  registerComponentActions(server, ctx);
  registerRevisionRoutes(server, ctx);
  registerSyncRoutes(server, ctx);
  registerApplyRoutes(server, ctx);
  registerHealthRoutes(server, ctx);
  registerMetricsRoutes(server, metrics);
  registerEventRoutes(server, ctx);
  registerGraphRoutes(server, ctx);
  registerLogRoutes(server, ctx);
  if (sessions) {
    registerSessionRoutes(server, ctx, sessions, deps.token);
    registerDashboardRoutes(server, assets);
  }

  // Before the listeners close: calls still waiting answer now instead of holding the agent's exit for their timeout.
  server.addHook('preClose', async () => waits.close());
  server.addHook('onClose', async () => {
    metrics.close();
    // What is still counted is said now rather than lost with the process.
    refusals.close();
  });
  return server;
}
