// GET /v1/components and GET /v1/components/{name}: what runs, from the store (reads never wait for the writer).
import type { ApiRouter } from '../api-router.js';
import type { ComponentRecord } from '../../store/state-store.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { parseComponentTarget } from '../component-target.js';
import { componentView, type ComponentView } from '../component-view.js';
import { groupView, type GroupView } from '../group-view.js';
import type { DesiredGroup } from '../../core/desired-state.js';
import { strictQuery } from '../query-params.js';

/**
 * The last answer of GET /v1/components and what it was made from: the store's records (frozen, the same objects
 * until a row changes), the applied revision, the live pids, and which instances are adopted but not yet checked
 * (shown `unknown`: when the check passes on an instance already recorded running, no record changes, so without
 * this the `unknown` of a list asked for in that window was served for good). A dashboard polling the list gets
 * the same bytes without building or serialising them again until one of those moves.
 */
interface ListMemo {
  records: readonly ComponentRecord[];
  desired: unknown;
  pids: Array<number | undefined>;
  unproven: boolean[];
  body: string;
}

function sameList(
  memo: ListMemo,
  records: readonly ComponentRecord[],
  desired: unknown,
  pids: Array<number | undefined>,
  unproven: boolean[],
): boolean {
  if (memo.desired !== desired || memo.records.length !== records.length) return false;
  for (let i = 0; i < records.length; i++)
    if (memo.records[i] !== records[i] || memo.pids[i] !== pids[i] || memo.unproven[i] !== unproven[i]) return false;
  return true;
}

export function registerComponentRoutes(server: ApiRouter, ctx: ApiContext): void {
  let memo: ListMemo | undefined;
  server.get('/v1/components', async (request, reply) => {
    strictQuery(request.query, []);
    const records = ctx.agent.store.components();
    const desired = ctx.agent.engine.desired;
    const pids = records.map((r) => ctx.agent.engine.pidOf(r.name));
    const unproven = records.map((r) => ctx.agent.engine.unproven?.(r.name) === true);
    if (!memo || !sameList(memo, records, desired, pids, unproven)) {
      const views: Array<ComponentView | GroupView> = nest(
        records.map((rec) => componentView(ctx.agent, rec)),
        desired?.groups ?? [],
      );
      memo = { records, desired, pids, unproven, body: JSON.stringify(views) };
    }
    return reply.type('application/json; charset=utf-8').send(memo.body);
  });

  server.get('/v1/components/*', async (request): Promise<ComponentView | GroupView> => {
    strictQuery(request.query, []);
    const { name, action } = parseComponentTarget(request.params['*']);
    if (action) throw new ApiError(404, 'KS_NOT_FOUND', `:${action} is an action: POST it`);
    const rec = ctx.agent.store.component(name);
    if (rec) return componentView(ctx.agent, rec);
    let group = ctx.agent.engine.desired?.groups?.find((g) => g.name === name);
    // `app/jobs` where jobs has replicas: the replicas of one member, shown as a group of their own.
    const units = group ? undefined : ctx.agent.engine.unitsOf(name);
    if (!group && units?.length) {
      const version = ctx.agent.store.component(units[0]!)?.version ?? '';
      group = { name, kind: 'replicas', version, recipePath: '', members: units, index: 0 };
    }
    if (!group)
      throw new ApiError(404, 'KS_COMPONENT_NOT_FOUND', `no component ${JSON.stringify(name)} on this device`);
    const members = group.members.flatMap((m) => {
      const r = ctx.agent.store.component(m);
      return r ? [componentView(ctx.agent, r)] : [];
    });
    return groupView(group, members);
  });
}

/** The members of each group under one entry for the group, where its first member would be; the rest as they come. */
function nest(views: ComponentView[], groups: readonly DesiredGroup[]): Array<ComponentView | GroupView> {
  if (groups.length === 0) return views;
  const groupOf = new Map<string, DesiredGroup>();
  for (const g of groups) for (const m of g.members) groupOf.set(m, g);
  const byName = new Map(views.map((v) => [v.name, v]));
  const out: Array<ComponentView | GroupView> = [];
  const placed = new Set<string>();
  for (const v of views) {
    const g = groupOf.get(v.name);
    if (!g) out.push(v);
    else if (!placed.has(g.name)) {
      placed.add(g.name);
      out.push(
        groupView(
          g,
          g.members.flatMap((m) => (byName.has(m) ? [byName.get(m)!] : [])),
        ),
      );
    }
  }
  // A group with no running record (scaled to zero, or not started yet) is still shown.
  for (const g of groups) if (!placed.has(g.name)) out.push(groupView(g, []));
  return out;
}
