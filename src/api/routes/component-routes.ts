// GET /v1/components and GET /v1/components/{name}: what runs, from the store (reads never wait for the writer).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { parseComponentTarget } from '../component-target.js';
import { componentView, type ComponentView } from '../component-view.js';
import { strictQuery } from '../query-params.js';

export function registerComponentRoutes(server: FastifyInstance, ctx: ApiContext): void {
  server.get('/v1/components', async (request): Promise<ComponentView[]> => {
    strictQuery(request.query, []);
    return ctx.agent.store.components().map((rec) => componentView(ctx.agent, rec));
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
