// Carries out a reconcile: stops in stop order, then starts each component the moment its dependencies are healthy.
import type { DesiredState } from '../core/desired-state.js';
import { nextSteps, type StartStatus } from '../core/schedule.js';
import type { Logger } from '../log/logger.js';
import type { StateStore } from '../store/state-store.js';
import type { ComponentWorker, StartOutcome } from './component-worker.js';
import { crashPoint } from './crash-point.js';
import type { HeldUpdateLock } from '../runtime/update-lock.js';
import { releaseAll } from './update-locks.js';

export interface ExecutionPlan {
  stopOrder: readonly string[];
  startOrder: readonly string[];
  /** Stopped and forgotten rather than restarted. */
  removed: ReadonlySet<string>;
}

export interface ExecutionResult {
  started: string[];
  stopped: string[];
  failed: Array<{ name: string; reason: string }>;
}

export interface ExecutorDeps {
  store: StateStore;
  workers: Map<string, ComponentWorker>;
  worker: (name: string) => ComponentWorker;
  log: Logger;
  concurrency: number;
  revision: string;
  /** True once the agent is stopping: nothing more is started. */
  stopping?: () => boolean;
  /**
   * Update locks the agent holds for the components it stops (SPEC §19): each is let go once its component has
   * stopped, and any left before the first start (a program may take its lock as it starts).
   */
  locks?: Map<string, HeldUpdateLock>;
}

/**
 * 1. Stop, dependents first: a component stops once every dependent being stopped with it has stopped (a dependency
 *    never stops under a running dependent); components that do not depend on each other stop at once, under the
 *    concurrency limit.
 * 2. Start eagerly: each component the moment its dependencies are healthy, no waiting for a whole layer. The
 *    concurrency limit bounds the installs and spawns in flight (the worker's start slot), not the waits for health,
 *    so a slow start never holds back an independent one. A failure skips its dependents (transitively); independent
 *    work goes on.
 */
export async function execute(
  plan: ExecutionPlan,
  desired: DesiredState,
  deps: ExecutorDeps,
): Promise<ExecutionResult> {
  const { store, log } = deps;
  const result: ExecutionResult = { started: [], stopped: [], failed: [] };

  const byName = new Map(desired.components.map((c) => [c.name, c]));
  // Start-first components that run now are rolled in the start phase (new beside old), not stopped here.
  const rolling = new Set(
    plan.startOrder.filter(
      (n) =>
        !plan.removed.has(n) &&
        byName.get(n)?.recipe.lifecycle.run.update_strategy === 'start-first' &&
        deps.workers.get(n)?.instanceRef !== undefined,
    ),
  );
  await stopAll(
    plan.stopOrder.filter((n) => !rolling.has(n)),
    plan.removed,
    deps,
    result,
  );
  if (deps.locks) await releaseAll(deps.locks);

  const position = new Map(desired.startOrder.map((n, i) => [n, i]));
  const layerOf = new Map<string, number>();
  desired.layers.forEach((l, i) => l.forEach((n) => layerOf.set(n, i)));
  const startSet = new Set(plan.startOrder);
  const dependencies = new Map(plan.startOrder.map((n) => [n, byName.get(n)!.dependencies.map((d) => d.component)]));
  const satisfiedOutside = new Set(
    desired.components
      .filter((c) => !startSet.has(c.name) && store.component(c.name)?.state === 'running')
      .map((c) => c.name),
  );
  const status = new Map<string, StartStatus>(plan.startOrder.map((n) => [n, 'waiting']));
  const layersAnnounced = new Set<number>();
  const inflight = new Map<string, Promise<void>>();

  for (;;) {
    // Every ready component is dispatched: the workers queue for start slots in this order (start order among the
    // ready ones), so the limit still admits them as the plan reads.
    const step = nextSteps(
      { startOrder: plan.startOrder, dependencies, satisfiedOutside },
      status,
      Number.POSITIVE_INFINITY,
    );
    for (const { name, because } of step.skip) {
      status.set(name, 'skipped');
      const reason = `not started: dependency ${because} ${status.get(because) === 'skipped' ? 'was not started' : 'is not healthy'}`;
      result.failed.push({ name, reason });
      if (store.component(name)) store.recordState(name, 'stopped', reason);
      log.warn({ component: name, state: 'stopped', reason, revision: deps.revision });
    }
    for (const name of step.start) {
      if (deps.stopping?.()) {
        status.set(name, 'skipped');
        result.failed.push({ name, reason: 'not started: the agent is stopping' });
        continue;
      }
      status.set(name, 'starting');
      const layer = layerOf.get(name)!;
      if (!layersAnnounced.has(layer)) {
        layersAnnounced.add(layer);
        log.info({ layer, components: desired.layers[layer]!.filter((n) => startSet.has(n)) }, 'starting layer');
      }
      const c = byName.get(name)!;
      inflight.set(
        name,
        (rolling.has(name)
          ? deps.worker(name).startFirst(c, position.get(name)!, deps.revision)
          : deps.worker(name).start(c, position.get(name)!, deps.revision)
        )
          .catch((e: Error): StartOutcome => ({ ok: false, reason: e.message }))
          .then((outcome) => {
            inflight.delete(name);
            status.set(name, outcome.ok ? 'healthy' : 'failed');
            if (outcome.ok) result.started.push(name);
            else result.failed.push({ name, reason: outcome.reason });
          }),
      );
    }
    if (inflight.size === 0) break;
    await Promise.race(inflight.values());
  }
  return result;
}

/**
 * Stops `order` (dependents before dependencies, as the diff orders it): each component once the components being
 * stopped that depend on it, by the edges that run now (the store's records), have stopped; the rest in parallel.
 */
export async function stopAll(
  order: readonly string[],
  removed: ReadonlySet<string>,
  deps: ExecutorDeps,
  result: ExecutionResult,
): Promise<void> {
  const { store, log } = deps;
  if (order.length === 0) return;
  const inSet = new Set(order);
  // waitingOn[n]: how many components being stopped depend on n and have not stopped yet.
  const waitingOn = new Map(order.map((n) => [n, 0]));
  const dependenciesOf = new Map<string, string[]>();
  for (const n of order) {
    const ds = [...new Set((store.component(n)?.dependencies ?? []).map((d) => d.component))].filter(
      (d) => inSet.has(d) && d !== n,
    );
    dependenciesOf.set(n, ds);
    for (const d of ds) waitingOn.set(d, waitingOn.get(d)! + 1);
  }
  const pending = [...order];
  const inflight = new Map<string, Promise<void>>();
  // A stop that throws (the runtime failed) ends the phase as before, once the stops in flight have ended.
  let failure: unknown;
  const stopOne = async (name: string): Promise<void> => {
    const w = deps.workers.get(name);
    if (w) await w.stop();
    const lock = deps.locks?.get(name);
    if (lock) {
      deps.locks!.delete(name);
      await lock.release();
    }
    if (removed.has(name)) {
      store.removeComponent(name);
      deps.workers.delete(name);
      log.info({ component: name, state: 'stopped', revision: deps.revision }, 'removed');
    } else if (store.component(name)) store.recordState(name, 'stopped');
    result.stopped.push(name);
    crashPoint('after-stop');
    for (const d of dependenciesOf.get(name) ?? []) waitingOn.set(d, waitingOn.get(d)! - 1);
  };
  while (pending.length || inflight.size) {
    // In stop order among the ready ones, so a chain keeps its order and the log reads as the plan does.
    for (let i = 0; failure === undefined && i < pending.length && inflight.size < Math.max(1, deps.concurrency);) {
      const name = pending[i]!;
      if (waitingOn.get(name)! > 0) {
        i++;
        continue;
      }
      pending.splice(i, 1);
      inflight.set(
        name,
        stopOne(name)
          .catch((e: unknown) => {
            failure ??= e;
          })
          .finally(() => inflight.delete(name)),
      );
    }
    if (inflight.size === 0) {
      if (failure !== undefined) break;
      // A cycle in recorded edges cannot come from a valid revision: stop what is left in order rather than hang.
      for (const n of pending) waitingOn.set(n, 0);
      continue;
    }
    await Promise.race(inflight.values());
  }
  if (failure !== undefined) throw failure;
}
