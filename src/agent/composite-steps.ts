// A composite (or a recipe's services) is updated as one unit (SPEC §12): the steps of an apply that hold one back,
// roll one back, and keep what a later rollback returns to. Called by engine.ts inside its queue.
import type { DesiredComponent, DesiredState } from '../core/desired-state.js';
import { diff } from '../core/diff.js';
import { allDependents, rollbackRelevant, withGroupsRestored } from '../core/group-rollback.js';
import type { Logger } from '../log/logger.js';
import type { StateStore } from '../store/state-store.js';
import { execute, type ExecutionResult, type ExecutorDeps } from './executor.js';

/**
 * A revision that could not update a group (its rollback is recorded) leaves that group at its previous members
 * when it is applied again (an agent restart, a resync): retrying would restart a healthy composite only to fail
 * again. Any other revision is a new attempt, and clears the record.
 */
export function holdBackGroups(
  store: StateStore,
  log: Logger,
  revision: DesiredState,
  id: string,
  previous: readonly DesiredComponent[],
): { state: DesiredState; held: string[] } {
  const holds = store.groupRollbacks();
  if (holds.length === 0) return { state: revision, held: [] };
  if (holds.some((h) => h.revision !== id)) {
    store.clearGroupRollbacks();
    return { state: revision, held: [] };
  }
  const groups = holds
    .map((h) => h.group)
    .filter((g) => revision.groups?.some((x) => x.name === g) && previous.some((c) => c.group === g));
  if (groups.length === 0) return { state: revision, held: [] };
  log.warn(
    { revision: id, groups },
    'this revision could not update these composites: they stay at their previous members until another revision',
  );
  return { state: withGroupsRestored(revision, groups, previous), held: groups };
}

/**
 * The next rollback's point of return. A group's members are kept together, and only once every one of them runs
 * healthy (a set that never ran healthy as a whole is nothing to go back to); a unit outside any group that binds
 * another's exports is kept when it started healthy.
 */
export function keepSpecs(store: StateStore, state: DesiredState, started: readonly string[]): void {
  for (const g of state.groups ?? []) {
    if (g.kind === 'replicas' && g.members.length === 0) continue;
    const members = state.components.filter((c) => c.group === g.name);
    if (members.length && members.every((c) => store.component(c.name)?.state === 'running'))
      for (const c of members) store.recordSpec(c.name, c);
  }
  const byName = new Map(state.components.map((c) => [c.name, c]));
  for (const name of started) {
    const c = byName.get(name);
    if (c && c.group === undefined && rollbackRelevant(c) && store.component(name)?.state === 'running')
      store.recordSpec(name, c);
  }
}

/**
 * Members of composites (and services groups) that are not healthy once an apply has run: those that failed in it,
 * and those still unhealthy or failed from an update a crash cut short (the agent adopted them, so nothing failed now).
 * Held ones (stopped by an operator, crash-looping) are not the update's doing.
 */
export function downMembers(
  store: StateStore,
  state: DesiredState,
  execution: ExecutionResult,
): Array<{ name: string; reason: string }> {
  const failed = new Map(execution.failed.map((f) => [f.name, f.reason]));
  const out: Array<{ name: string; reason: string }> = [];
  for (const g of state.groups ?? []) {
    if (g.kind === 'replicas') continue;
    for (const m of g.members) {
      const rec = store.component(m);
      if (failed.has(m)) out.push({ name: m, reason: failed.get(m)! });
      else if (rec && !rec.held && rec.state !== 'running' && rec.state !== 'crash-looping')
        out.push({ name: m, reason: `${rec.state} after the update` });
    }
  }
  return out;
}

/**
 * When one of a group's new members failed, every member goes back to what it last ran healthy, what binds their
 * exports goes back with them, and what depends on them is started again. Returns the groups rolled back and the
 * state that now runs. A group with nothing kept, or whose members did not change, has nothing to undo.
 */
export async function rollBackGroups(
  desired: DesiredState,
  previous: readonly DesiredComponent[],
  down: ReadonlyArray<{ name: string }>,
  deps: ExecutorDeps,
  agentLog: Logger,
): Promise<{ groups: string[]; state: DesiredState }> {
  const failed = new Set(down.map((f) => f.name));
  const before = new Map(previous.map((c) => [c.name, c]));
  const groups: string[] = [];
  for (const g of desired.groups ?? []) {
    if (g.kind === 'replicas' || !g.members.some((m) => failed.has(m))) continue;
    const old = previous.filter((c) => c.group === g.name);
    const changed =
      g.members.some((m) => before.get(m)?.hash !== desired.components.find((c) => c.name === m)?.hash) ||
      old.some((o) => !g.members.includes(o.name));
    if (old.length && changed) groups.push(g.name);
  }
  if (!groups.length) return { groups, state: desired };
  const { store, revision } = deps;
  const state = withGroupsRestored(desired, groups, previous);
  const members = new Set(
    state.components.filter((c) => c.group !== undefined && groups.includes(c.group)).map((c) => c.name),
  );
  const undone = desired.components
    .filter((c) => c.group !== undefined && groups.includes(c.group) && !members.has(c.name))
    .map((c) => c.name);
  const scope = new Set([...members, ...undone, ...allDependents(state, members)]);
  const r = diff(state, store.actualState());
  const removed = new Set(undone);
  agentLog.warn(
    { revision, groups, start_order: r.startOrder.filter((n) => scope.has(n)) },
    'a new member never got healthy: rolling the composite back to its previous members',
  );
  const again = await execute(
    {
      stopOrder: r.stopOrder.filter((n) => scope.has(n)),
      startOrder: r.startOrder.filter((n) => scope.has(n)),
      removed,
    },
    state,
    deps,
  );
  for (const name of removed) if (store.component(name)) store.removeComponent(name);
  for (const g of groups) store.recordGroupRollback(g, revision);
  if (again.failed.length)
    agentLog.error(
      { revision, failed: again.failed.map((f) => f.name) },
      'the rollback did not bring every previous member back',
    );
  return { groups, state };
}
