// What an agent finds running when it starts (SPEC §5): the recorded instances it adopts, and — at the first apply
// after that — the health check that proves an adopted instance before anything is said about it.
import type { DesiredComponent, DesiredState } from '../core/desired-state.js';
import { rollbackRelevant } from '../core/group-rollback.js';
import type { Logger } from '../log/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ApplyFailure, StateStore } from '../store/state-store.js';
import type { ComponentWorker } from './component-worker.js';
import { abortableSleep, startBudgetMs } from './health-watch.js';
import { sweepOrphans } from './orphan-sweep.js';

export interface AdoptionDeps {
  store: StateStore;
  log: Logger;
  graceMs: number;
  worker: (name: string) => ComponentWorker;
  workers: ReadonlyMap<string, ComponentWorker>;
}

/**
 * Re-attaches to every recorded instance that is still the same process (pid and start time) or container, and marks
 * the rest stopped. Nothing is restarted, and nothing adopted counts as healthy until checkUntouched() probed it.
 */
export async function adoptRecorded(
  runtime: (kind: 'process' | 'container') => Runtime | undefined,
  ownerTag: string | undefined,
  deps: AdoptionDeps,
): Promise<void> {
  const { store, log } = deps;
  // First the processes no record accounts for (spawned just before a crash): they are ours, and unknown.
  if (ownerTag !== undefined) {
    const recorded = store
      .components()
      .flatMap((r) =>
        r.instance?.kind === 'process' ? [{ pid: r.instance.pid, startTime: r.instance.startTime }] : [],
      );
    for (const o of await sweepOrphans(ownerTag, recorded))
      log.warn(
        { component: o.component, pid: o.pid },
        'removed an unrecorded process this agent started before it stopped',
      );
  }
  for (const rec of store.components()) {
    const rt = rec.instance ? runtime(rec.instance.kind) : undefined;
    const inst = rec.instance && rt ? await rt.adopt(rec.instance) : undefined;
    const proven = rec.state === 'running' || rec.state === 'unhealthy' || rec.state === 'backoff';
    const live = proven || rec.state === 'starting' || rec.state === 'installing' || rec.state === 'stopping';
    if (inst && proven) {
      deps.worker(rec.name).adopt(inst, undefined, rec.revision);
      log.info(
        {
          component: rec.name,
          pid: inst.ref.kind === 'process' ? inst.ref.pid : undefined,
          container: inst.ref.kind === 'container' ? inst.ref.id.slice(0, 12) : undefined,
          revision: rec.revision,
        },
        'adopted running instance',
      );
    } else if (live) {
      // Caught mid-start or mid-stop: up but unproven. Stop it without adopting; the next reconcile starts it afresh.
      if (inst && rt) await rt.stop(inst.ref, deps.graceMs);
      store.recordState(
        rec.name,
        'stopped',
        inst ? 'the agent stopped while it was starting or stopping' : 'not running after the agent restarted',
      );
    }
  }
  // Containers outlive their records (an exited one stays in the engine, a crash may leave a new one unrecorded):
  // every owned container that is not a component's adopted instance goes. Foreign containers are never listed.
  const container = runtime('container');
  if (container?.listOwned && container.removeOwned) {
    let owned: Array<{ id: string; component: string }> = [];
    try {
      owned = await container.listOwned();
    } catch (e) {
      log.warn(
        { err: (e as Error).message },
        "cannot list this agent's containers: leftovers are removed at the next start",
      );
    }
    const kept = new Set(
      [...deps.workers.values()].flatMap((w) => (w.instanceRef?.kind === 'container' ? [w.instanceRef.id] : [])),
    );
    for (const o of owned) {
      if (kept.has(o.id)) continue;
      await container
        .removeOwned(o.id)
        .catch((e: Error) =>
          log.warn({ component: o.component, container: o.id, err: e.message }, 'cannot remove a leftover container'),
        );
      log.info(
        { component: o.component, container: o.id.slice(0, 12) },
        'removed a container this agent owned but no longer runs',
      );
    }
  }
}

/**
 * An apply's step 3: what it leaves untouched keeps its instance and takes the new description (position,
 * dependencies); a unit outside any group that binds another's exports, running unchanged with no spec kept yet,
 * gets its own (the point of return of a later rollback).
 */
export function refreshUntouched(
  desired: DesiredState,
  noTouch: readonly string[],
  previous: readonly DesiredComponent[],
  revision: string,
  deps: AdoptionDeps,
): void {
  const { store } = deps;
  const byName = new Map(desired.components.map((c) => [c.name, c]));
  const untouched = new Set(noTouch);
  const kept = new Set(previous.map((c) => c.name));
  desired.startOrder.forEach((name, position) => {
    if (!untouched.has(name)) return;
    const c = byName.get(name)!;
    const rec = store.component(name);
    if (rec) store.upsertComponent({ ...rec, position, dependencies: c.dependencies.map((d) => ({ ...d })) });
    if (rec && !kept.has(name) && c.group === undefined && rollbackRelevant(c) && rec.state === 'running')
      store.recordSpec(name, c);
    deps.workers.get(name)?.refresh(c);
    if (rec?.state === 'running' || rec?.state === 'unhealthy')
      deps.log.info({ component: name, revision }, 'reusing existing running instance (no restart)');
  });
}

/** How long a crash restart under way (backoff, starting) is waited for beyond the component's start budget. */
const RESTART_GRACE_MS = 5_000;

/**
 * An apply's step 5: what it left untouched must be healthy for its outcome to be a success (SPEC §5). An instance
 * adopted after a restart, or one the monitor found unhealthy, is probed until healthy within its start budget; one
 * whose crash restart is under way is waited for; a crash-looping one fails the apply; one an operator holds stopped
 * is the operator's doing and does not. Returns what is not healthy, with why.
 */
export async function checkUntouched(
  names: readonly string[],
  desired: DesiredState,
  deps: AdoptionDeps & { now: () => number; stopping: () => boolean },
): Promise<ApplyFailure[]> {
  const { store, log, now } = deps;
  const byName = new Map(desired.components.map((c) => [c.name, c]));
  const adopted = names.filter((n) => deps.workers.get(n)?.unproven === true);
  if (adopted.length) log.info({ components: adopted }, 'checking the health of adopted instances');
  const results = await Promise.all(
    names.map(async (name): Promise<ApplyFailure | undefined> => {
      const rec = store.component(name);
      const c = byName.get(name);
      if (!rec || !c) return undefined;
      if (rec.state === 'crash-looping') return { name, reason: rec.reason ?? 'crash-looping' };
      if (rec.held && rec.state === 'stopped') return undefined;
      const w = deps.workers.get(name);
      if (w && (w.unproven || rec.state === 'unhealthy')) {
        const r = await w.checkHealth();
        return r.ok ? undefined : { name, reason: r.reason };
      }
      if (rec.state === 'running') return undefined;
      // A crash restart under way belongs to its worker: its outcome is waited for, not made a second time.
      const deadline = now() + startBudgetMs(c) + RESTART_GRACE_MS;
      for (
        let s: string = rec.state;
        (s === 'backoff' || s === 'starting' || s === 'installing') && now() < deadline && !deps.stopping();
        s = store.component(name)?.state ?? 'stopped'
      )
        await abortableSleep(100);
      const after = store.component(name);
      return after?.state === 'running'
        ? undefined
        : { name, reason: `${after?.state ?? 'gone'}${after?.reason ? `: ${after.reason}` : ''}` };
    }),
  );
  const failures = results.filter((r): r is ApplyFailure => r !== undefined);
  if (adopted.length) {
    const down = new Set(failures.map((f) => f.name));
    log.info(
      { healthy: adopted.filter((n) => !down.has(n)), unhealthy: adopted.filter((n) => down.has(n)) },
      'adopted instances checked',
    );
  }
  return failures;
}
