// What the engine (engine.ts) reads between its steps: whether the applied revision runs healthy, what crashed during
// an apply, what a reconcile removes, what its plan logs, the order everything stops in. Pure reads of the records
// and values, apart from the steps that change what runs.
import type { Reconcile } from '../core/diff.js';
import type { DesiredState } from '../core/desired-state.js';
import type { StateStore } from '../store/state-store.js';
import type { ComponentWorker } from './component-worker.js';

/**
 * Whether everything `desired` asked runs healthy: every component running the hash it asked for, proven since any
 * restart, no composite held back.
 */
export function revisionHealth(
  desired: DesiredState,
  store: StateStore,
  workers: ReadonlyMap<string, ComponentWorker>,
): { ok: boolean; down: string[] } {
  const down = desired.components
    .filter((c) => {
      const r = store.component(c.name);
      return r?.state !== 'running' || r.hash !== c.hash || workers.get(c.name)?.unproven === true;
    })
    .map((c) => c.name);
  const heldBack = store.groupRollbacks().map((g) => g.group);
  return { ok: down.length === 0 && heldBack.length === 0, down: [...down, ...heldBack] };
}

/** The components an apply started that are not running any more as it ends, and why (step 7). */
export function crashedSince(store: StateStore, started: string[]): Array<{ name: string; reason: string }> {
  return started.flatMap((n) => {
    const r = store.component(n);
    return r && r.state !== 'running'
      ? [{ name: n, reason: `${r.state} before the apply ended${r.reason ? `: ${r.reason}` : ''}` }]
      : [];
  });
}

/** The components a reconcile removes (no longer in the revision). */
export function removedBy(reconcile: Reconcile): Set<string> {
  return new Set(
    Object.entries(reconcile.reasonCodes)
      .filter(([, r]) => r.kind === 'removed')
      .map(([n]) => n),
  );
}

/** The reconcile plan's log fields (step 2). */
export function reconcilePlanFields(revision: string, reconcile: Reconcile) {
  return {
    revision,
    stop_order: reconcile.stopOrder,
    start_order: reconcile.startOrder,
    no_touch: reconcile.noTouch,
  };
}

/** Every recorded component, dependents first: the order stopAll() stops them in. */
export function everythingInStopOrder(store: StateStore): string[] {
  return store
    .components()
    .map((r) => r.name)
    .reverse();
}
