// GET /v1/components and GET /v1/components/{name}: what runs, from the store (reads never wait for the writer).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { parseComponentTarget } from '../component-target.js';
import { componentView, type ComponentView } from '../component-view.js';
import { strictQuery } from '../query-params.js';
import type { ComponentRecord } from '../../agent/state-store.js';

/**
 * The last answer of GET /v1/components and what it was made from: the store's records (frozen, the same objects
 * until a row changes), the applied revision and the live pids. A dashboard polling the list gets the same bytes
 * without building or serialising them again until one of those moves.
 */
interface ListMemo {
  records: readonly ComponentRecord[];
  desired: unknown;
  pids: Array<number | undefined>;
  body: string;
}

function sameList(memo: ListMemo, records: readonly ComponentRecord[], desired: unknown, pids: Array<number | undefined>): boolean {
  if (memo.desired !== desired || memo.records.length !== records.length) return false;
  for (let i = 0; i < records.length; i++) if (memo.records[i] !== records[i] || memo.pids[i] !== pids[i]) return false;
  return true;
}

export function registerComponentRoutes(server: FastifyInstance, ctx: ApiContext): void {
  let memo: ListMemo | undefined;
  server.get('/v1/components', async (request, reply) => {
    strictQuery(request.query, []);
    const records = ctx.agent.store.components();
    const desired = ctx.agent.engine.desired;
    const pids = records.map((r) => ctx.agent.engine.pidOf(r.name));
    if (!memo || !sameList(memo, records, desired, pids)) {
      const views: ComponentView[] = records.map((rec) => componentView(ctx.agent, rec));
      memo = { records, desired, pids, body: JSON.stringify(views) };
    }
    return reply.type('application/json; charset=utf-8').send(memo.body);
  });

  server.get<{ Params: { target: string } }>('/v1/components/:target', async (request): Promise<ComponentView> => {
    strictQuery(request.query, []);
    const { name, action } = parseComponentTarget(request.params.target);
    if (action) throw new ApiError(404, 'KS_NOT_FOUND', `:${action} is an action: POST it`);
    const rec = ctx.agent.store.component(name);
    if (!rec) throw new ApiError(404, 'KS_COMPONENT_NOT_FOUND', `no component ${JSON.stringify(name)} on this device`);
    return componentView(ctx.agent, rec);
  });
}
