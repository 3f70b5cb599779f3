// GET /v1/graph: the applied revision's dependency graph as the agent runs it (SPEC §4): the layers it starts in, one
// edge per dependency (`from` depends on `to`, hard or ordering) and the groups that run as one plan component.
import type { ApiRouter } from '../api-router.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { strictQuery } from '../query-params.js';
import type { GraphView } from '../views.js';

export type { GraphView };

/** Built once per desired state: it changes only when a revision is applied. */
const views = new WeakMap<object, GraphView>();

export function registerGraphRoutes(server: ApiRouter, ctx: ApiContext): void {
  server.get('/v1/graph', async (request) => {
    strictQuery(request.query, []);
    const desired = ctx.agent.engine.desired;
    if (!desired) throw new ApiError(404, 'KS_NO_REVISION', 'no revision has been applied on this device yet');
    let view = views.get(desired);
    if (!view) {
      view = {
        layers: desired.layers.map((l) => [...l]),
        edges: desired.components.flatMap((c) =>
          c.dependencies.map((d) => ({ from: c.name, to: d.component, type: d.type })),
        ),
        groups: (desired.groups ?? []).map((g) => ({ name: g.name, kind: g.kind, members: [...g.members] })),
      };
      views.set(desired, view);
    }
    return view;
  });
}
