// POST /v1/sync (look for a new revision now) and POST /v1/webhooks/github (Git sources come later).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { strictQuery } from '../query-params.js';

export function registerSyncRoutes(server: FastifyInstance, ctx: ApiContext): void {
  server.post('/v1/sync', async (request, reply) => {
    strictQuery(request.query, []);
    if (!ctx.agent.sync()) throw new ApiError(503, 'KS_SYNC_UNAVAILABLE', 'this agent has no source that can look for a revision on demand');
    // Accepted, not done: the look runs in the background and a new revision goes through the agent's loop.
    return reply.code(202).send({ sync: 'requested' });
  });

  // Behind the same guard as every POST for now. A real GitHub webhook cannot send our bearer token: when Git sources
  // arrive this route checks X-Hub-Signature-256 (HMAC of the body with a shared secret) instead.
  server.post('/v1/webhooks/github', async () => {
    throw new ApiError(501, 'KS_NOT_IMPLEMENTED', 'webhooks arrive with Git sources (--repo), which this version does not have yet; POST /v1/sync looks for a revision now');
  });
}
