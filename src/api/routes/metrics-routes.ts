// GET /metrics: Prometheus text format.
import type { FastifyInstance } from 'fastify';
import type { ApiMetrics } from '../api-metrics.js';

export function registerMetricsRoutes(server: FastifyInstance, metrics: ApiMetrics): void {
  server.get('/metrics', async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
