// What the engine (engine.ts) hands the helpers of its steps and actions (executor.ts, adoption.ts, engine-locks.ts,
// operator-actions.ts), built from its parts. Apart so engine.ts stays its queue and the apply's numbered steps;
// nothing here changes what runs.
import type { DesiredState } from '../core/desired-state.js';
import type { Logger } from '../log/logger.js';
import type { AdoptionDeps } from './adoption.js';
import type { ComponentWorker } from './component-worker.js';
import type { LockLookup } from './engine-locks.js';
import type { EngineDeps } from './engine-types.js';
import type { ExecutionResult, ExecutorDeps } from './executor.js';
import type { OperatorContext } from './operator-actions.js';

/** The engine's own pieces the contexts are made of; `worker` and `stopping` read the engine when called. */
export interface EngineParts {
  deps: EngineDeps;
  workers: Map<string, ComponentWorker>;
  /** The worker of a component, made on first use. */
  worker: (name: string) => ComponentWorker;
  agentLog: Logger;
  supLog: Logger;
  /** Set by interrupt(): the agent is stopping. */
  stopping: () => boolean;
}

export function executorDepsOf(p: EngineParts, revision: string): ExecutorDeps {
  return {
    store: p.deps.store,
    workers: p.workers,
    worker: p.worker,
    log: p.supLog,
    concurrency: p.deps.concurrency,
    revision,
    stopping: p.stopping,
  };
}

export function lockLookupOf(p: EngineParts): LockLookup {
  return { workers: p.workers, workDir: (n) => p.deps.paths(n).workDir, log: p.agentLog };
}

export function adoptionDepsOf(p: EngineParts): AdoptionDeps {
  return {
    store: p.deps.store,
    log: p.agentLog,
    graceMs: p.deps.graceMs,
    worker: p.worker,
    workers: p.workers,
  };
}

/** Step 5's: adoption's, with the clock and whether the agent is stopping. */
export function untouchedCheckDepsOf(p: EngineParts): AdoptionDeps & { now: () => number; stopping: () => boolean } {
  return {
    ...adoptionDepsOf(p),
    now: p.deps.now,
    stopping: p.stopping,
  };
}

/** Read when the action's turn comes: the desired state then, not when it was asked for. */
export function operatorContextOf(
  p: EngineParts,
  desired: DesiredState | undefined,
  executeOrders: (d: DesiredState, stopOrder: string[], startOrder: string[]) => Promise<ExecutionResult>,
): OperatorContext {
  return {
    desired,
    store: p.deps.store,
    log: p.agentLog,
    now: () => p.deps.now(),
    executeOrders,
  };
}
