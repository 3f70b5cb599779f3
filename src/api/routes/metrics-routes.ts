// GET /metrics: Prometheus text format.
import type { ApiMetrics } from '../api-metrics.js';
import type { ApiRouter } from '../api-router.js';

export function registerMetricsRoutes(server: ApiRouter, metrics: ApiMetrics): void {
  server.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(metrics.text()));
}
