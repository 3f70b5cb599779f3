// Carries out a reconcile: stops in stop order, then starts each component the moment its dependencies are healthy.
import type { DesiredState } from '../core/desired-state.js';
import { nextSteps, type StartStatus } from '../core/schedule.js';
import type { Logger } from '../log/logger.js';
import type { ComponentWorker, StartOutcome } from './component-worker.js';
import { crashPoint } from './crash-point.js';
import type { StateStore } from './state-store.js';

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
}

/**
 * 1. Stop, dependents first, one at a time (a dependency never stops under a running dependent).
 * 2. Start eagerly under the concurrency limit: no waiting for a whole layer. A failure skips its
 *    dependents (transitively); independent work goes on.
 */
export async function execute(plan: ExecutionPlan, desired: DesiredState, deps: ExecutorDeps): Promise<ExecutionResult> {
  const { store, log } = deps;
  const result: ExecutionResult = { started: [], stopped: [], failed: [] };

  const byName = new Map(desired.components.map((c) => [c.name, c]));
  // Start-first components that run now are rolled in the start phase (new beside old), not stopped here.
  const rolling = new Set(
    plan.startOrder.filter((n) => !plan.removed.has(n) && byName.get(n)?.recipe.lifecycle.run.update_strategy === 'start-first' && deps.workers.get(n)?.instanceRef !== undefined),
  );
  for (const name of plan.stopOrder) {
    if (rolling.has(name)) continue;
    const w = deps.workers.get(name);
    if (w) await w.stop();
    if (plan.removed.has(name)) {
      store.removeComponent(name);
      deps.workers.delete(name);
      log.info({ component: name, state: 'stopped', revision: deps.revision }, 'removed');
    } else if (store.component(name)) store.recordState(name, 'stopped');
    result.stopped.push(name);
    crashPoint('after-stop');
  }

  const position = new Map(desired.startOrder.map((n, i) => [n, i]));
  const layerOf = new Map<string, number>();
  desired.layers.forEach((l, i) => l.forEach((n) => layerOf.set(n, i)));
  const startSet = new Set(plan.startOrder);
  const dependencies = new Map(plan.startOrder.map((n) => [n, byName.get(n)!.dependencies.map((d) => d.component)]));
  const satisfiedOutside = new Set(
    desired.components.filter((c) => !startSet.has(c.name) && store.component(c.name)?.state === 'running').map((c) => c.name),
  );
  const status = new Map<string, StartStatus>(plan.startOrder.map((n) => [n, 'waiting']));
  const layersAnnounced = new Set<number>();
  const inflight = new Map<string, Promise<void>>();

  for (;;) {
    const step = nextSteps({ startOrder: plan.startOrder, dependencies, satisfiedOutside }, status, deps.concurrency);
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
        (rolling.has(name) ? deps.worker(name).startFirst(c, position.get(name)!, deps.revision) : deps.worker(name).start(c, position.get(name)!, deps.revision))
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
