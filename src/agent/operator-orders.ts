// What an operator's start (and a crash recovery's cascade) must do, computed from the applied revision and the
// states as recorded: pure, so the API's dry runs and the engine's actions read the same answer.
import type { DesiredState } from '../core/desired-state.js';
import type { ComponentState } from '../store/state-store.js';

/** States on the way up or up: a dependency in one is waited for, not started a second time. */
const UP: ReadonlySet<string> = new Set(['running', 'starting', 'unhealthy', 'installing', 'backoff']);
const RUNNING: ReadonlySet<string> = new Set(['running', 'starting', 'unhealthy']);

/** The start of `units`: its own units not running, and its dependencies down (transitively), in start order. */
export function startPlan(
  desired: DesiredState,
  units: readonly string[],
  stateOf: (name: string) => ComponentState | undefined,
) {
  const own = new Set(units);
  const byName = new Map(desired.components.map((c) => [c.name, c]));
  const needed = new Set<string>();
  const visit = (n: string) => {
    for (const d of byName.get(n)?.dependencies ?? []) {
      if (needed.has(d.component) || own.has(d.component)) continue;
      needed.add(d.component);
      visit(d.component);
    }
  };
  for (const u of units) visit(u);
  const up = (n: string) => UP.has(stateOf(n) ?? 'stopped');
  const isRunning = (n: string) => RUNNING.has(stateOf(n) ?? 'stopped');
  const startOrder = desired.startOrder.filter((n) => (own.has(n) && !isRunning(n)) || (needed.has(n) && !up(n)));
  const waitingFor = desired.startOrder.filter((n) => needed.has(n) && up(n) && stateOf(n) !== 'running');
  return { startOrder, waitingFor, running: units.every(isRunning), up };
}

/** The transitive hard dependents of `name`, in start order (ordering dependents stay). */
export function hardDependents(desired: DesiredState, name: string): string[] {
  const dependents = new Set<string>();
  const byName = new Map(desired.components.map((c) => [c.name, c]));
  for (const n of desired.startOrder) {
    const c = byName.get(n)!;
    if (c.dependencies.some((d) => d.type === 'hard' && (d.component === name || dependents.has(d.component))))
      dependents.add(n);
  }
  return desired.startOrder.filter((n) => dependents.has(n));
}
