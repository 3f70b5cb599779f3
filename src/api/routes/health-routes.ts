// GET /healthz: the agent's own liveness. Cheap on purpose (no store query): a supervisor may probe it every second.
import type { ApiRouter } from '../api-router.js';
import type { ApiContext } from '../api-context.js';

export function registerHealthRoutes(server: ApiRouter, ctx: ApiContext): void {
  server.get('/healthz', async () => ({ status: 'ok', uptimeSeconds: Math.round((ctx.now() - ctx.startedAt) / 1000) }));
}
