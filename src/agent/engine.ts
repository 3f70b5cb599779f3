// The one writer: every change to what runs (a revision, a crash cascade, an operator's action) runs here, one at a time.
// An apply's update-lock step is engine-locks.ts, the operator's actions operator-actions.ts; both run in this queue.
import type { DesiredState } from '../core/desired-state.js';
import { diff } from '../core/diff.js';
import { unitsOf, type RestartOrders } from '../core/restart-cascade.js';
import pLimit from 'p-limit';
import type { Logger } from '../log/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import { adoptRecorded, checkUntouched, refreshUntouched } from './adoption.js';
import { ComponentWorker, type WorkerDeps } from './component-worker.js';
import { downMembers, holdBackGroups, keepSpecs, rollBackGroups } from './composite-steps.js';
import { execute, stopAll, type ExecutionResult } from './executor.js';
import { applyOutcome, type ApplyResult } from './apply-outcome.js';
import {
  restartNow,
  restartOrders,
  startNow,
  startOrders,
  stopNow,
  type OperatorContext,
  type OperatorResult,
} from './operator-actions.js';
import { releaseAll, type LockHolder } from './update-locks.js';
import { checkLocks, tryLocks, type ApplyOptions, type LocksHeld } from './engine-locks.js';
import type { HeldUpdateLock } from '../runtime/update-lock.js';
import type { ApplyBegin, EngineDeps, LockOptions, RevisionInfo } from './engine-types.js';
import {
  adoptionDepsOf,
  executorDepsOf,
  lockLookupOf,
  operatorContextOf,
  untouchedCheckDepsOf,
  type EngineParts,
} from './engine-contexts.js';
import { crashedSince, everythingInStopOrder, reconcilePlanFields, removedBy, revisionHealth } from './engine-reads.js';
import { cascadeAfterRecovery } from './recovery-cascade.js';

export type { ApplyResult } from './apply-outcome.js';
export type { ApplyOptions, LocksHeld } from './engine-locks.js';

export type { OperatorResult } from './operator-actions.js';

export class Engine {
  private queue: Promise<unknown> = Promise.resolve();
  readonly workers = new Map<string, ComponentWorker>();
  desired?: DesiredState;
  private readonly agentLog: Logger;
  /** Set by interrupt(): the agent is stopping. */
  private stopping = false;
  /** An apply (or a resume) runs: nothing is to be concluded from the records meanwhile. */
  private busy = false;
  /** The revision whose desired state was last carried out in this run (applied or resumed). */
  loaded?: string;
  private readonly supLog: Logger;
  /** Shared by every worker: the limit is the device's, not a component's. */
  private readonly startSlot: WorkerDeps['startSlot'];
  /** What the contexts of its steps' helpers are made of (engine-contexts.ts). */
  private readonly parts: EngineParts;

  constructor(private readonly deps: EngineDeps) {
    this.agentLog = deps.log.child({ module: 'agent' });
    this.supLog = deps.log.child({ module: 'supervisor' });
    const limit = pLimit(Math.max(1, deps.concurrency));
    this.startSlot = (work) => limit(work);
    const { workers, agentLog, supLog } = this;
    this.parts = { deps, workers, worker: (n) => this.worker(n), agentLog, supLog, stopping: () => this.stopping };
  }

  /** Runs `op` after every operation queued before it; the engine's only way to change what runs. */
  run<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private worker(name: string): ComponentWorker {
    let w = this.workers.get(name);
    if (!w) {
      w = new ComponentWorker(name, {
        ...this.deps,
        log: this.supLog,
        startSlot: this.startSlot,
        onRecovered: (n) => void this.run(() => cascadeAfterRecovery(n, this.operatorContext())),
      });
      this.workers.set(name, w);
    }
    return w;
  }

  /** At agent start: re-attach to what runs as recorded (adoption.ts). Nothing is restarted, nothing assumed healthy. */
  adoptAll(runtime: (kind: 'process' | 'container') => Runtime | undefined, ownerTag?: string): Promise<void> {
    return adoptRecorded(runtime, ownerTag, adoptionDepsOf(this.parts));
  }

  /**
   * Diffs the revision against what runs and carries it out (SPEC §4), in the queue. `begin` is told the reconcile
   * before anything is touched (outcomes.ts writes the apply's row there); without it the revision is resumed (the
   * one the device runs, offered again after a restart): the same steps, nothing recorded. Returns what happened;
   * outcomes.ts alone turns it into rows and reports.
   */
  apply(revision: DesiredState, rev: RevisionInfo, begin?: ApplyBegin): Promise<ApplyResult>;
  apply(
    revision: DesiredState,
    rev: RevisionInfo,
    begin: ApplyBegin,
    o: ApplyOptions,
  ): Promise<ApplyResult | LocksHeld>;
  apply(
    revision: DesiredState,
    rev: RevisionInfo,
    begin?: ApplyBegin,
    o: ApplyOptions = {},
  ): Promise<ApplyResult | LocksHeld> {
    return this.run(async () => {
      this.busy = true;
      const locks = new Map<string, HeldUpdateLock>();
      try {
        return await this.applySteps(revision, rev, begin, o, locks);
      } finally {
        await releaseAll(locks);
        this.busy = false;
      }
    });
  }

  private async applySteps(
    revision: DesiredState,
    rev: RevisionInfo,
    begin: ApplyBegin | undefined,
    o: ApplyOptions,
    locks: Map<string, HeldUpdateLock>,
  ): Promise<ApplyResult | LocksHeld> {
    const { store } = this.deps;
    // 1. Composites this revision could not update stay at what they last ran healthy (kept even across a crash).
    const previous = store.specs();
    const { state: desired, held } = holdBackGroups(store, this.agentLog, revision, rev.id, previous);
    // 2. The reconcile; then the update locks of what it would stop (SPEC §19): one held, and nothing is touched.
    const reconcile = diff(desired, store.actualState());
    if (o.locks && reconcile.stopOrder.length) {
      const check = await checkLocks(reconcile.stopOrder, desired, previous, o.locks, rev.id, lockLookupOf(this.parts));
      if (check.kind === 'held') return { holders: check.holders };
      for (const n of check.borrowed) o.locks.claim?.(n);
      for (const [n, l] of check.taken) locks.set(n, l);
    }
    begin?.(reconcile);
    this.agentLog.info(reconcilePlanFields(rev.id, reconcile), 'reconcile plan');
    // 3. Untouched components keep their instance and take the new description (position, dependencies).
    refreshUntouched(desired, reconcile.noTouch, previous, rev.id, adoptionDepsOf(this.parts));
    // 4. Stops, then starts, each the moment its dependencies are healthy.
    const removed = removedBy(reconcile);
    const deps = { ...executorDepsOf(this.parts, rev.id), locks };
    const execution = await execute(
      { stopOrder: reconcile.stopOrder, startOrder: reconcile.startOrder, removed },
      desired,
      deps,
    );
    for (const name of removed) if (store.component(name)) store.removeComponent(name);
    this.desired = desired;
    // 5. What was left untouched is healthy too: adopted instances are probed, unhealthy ones given their budget.
    const untouched = this.stopping
      ? []
      : await checkUntouched(reconcile.noTouch, desired, untouchedCheckDepsOf(this.parts));
    // 6. A composite whose new member failed goes back to its previous members, as one unit.
    const down = this.stopping ? [] : downMembers(store, desired, execution);
    const rolledBack = down.length
      ? await rollBackGroups(desired, previous, down, deps, this.agentLog)
      : { groups: [], state: desired };
    this.desired = rolledBack.state;
    keepSpecs(store, this.desired, execution.started);
    if (!this.stopping) this.loaded = rev.id;
    // 7. The outcome: success only when everything the revision asked runs healthy (SPEC §5).
    return applyOutcome({
      desired,
      reconcile,
      execution,
      untouched,
      down,
      rolledBack: rolledBack.groups,
      held,
      stopping: this.stopping,
      crashedSince: crashedSince(store, execution.started),
    });
  }

  /**
   * Who holds an update lock that applying `revision` would wait for, tried and let go at once: nothing is touched.
   * An agent update asks before it switches (SPEC §17, §19): a device busy with a job must not fail its trial.
   */
  lockHolders(revision: DesiredState, o: LockOptions, revisionId: string): Promise<LockHolder[]> {
    return this.run(() => tryLocks(revision, this.deps.store, o, revisionId, lockLookupOf(this.parts)));
  }

  /**
   * Whether everything the applied revision asked runs healthy: every component running the hash it asked for,
   * proven since any restart, no composite held back. Undefined while an apply runs or before one has.
   */
  healthy(): { ok: boolean; down: string[] } | undefined {
    if (this.busy || !this.desired) return undefined;
    return revisionHealth(this.desired, this.deps.store, this.workers);
  }

  /** The orders an operator restart of `name` would carry out (the API's `?dry=true`); undefined for an unknown name. */
  restartOrders(name: string): RestartOrders | undefined {
    return restartOrders(this.desired, name);
  }

  /** The units `name` stands for in the applied revision (a group's members), or undefined for an unknown name. */
  unitsOf(name: string): string[] | undefined {
    return this.desired && unitsOf(this.desired, name);
  }

  /** An operator restart of `name` and its hard dependents (operator-actions.ts); clears a crash-loop hold (SPEC §5). */
  restart(name: string): Promise<OperatorResult> {
    return this.run(() => restartNow(name, this.operatorContext()));
  }

  /** Stops `name` after its hard dependents, and holds them all stopped until started again (or changed by a revision). */
  stop(name: string): Promise<OperatorResult> {
    return this.run(() => stopNow(name, this.operatorContext()));
  }

  /** Starts `name` once its dependencies are healthy, waiting up to `dependencyWaitMs` for those on their way up (operator-actions.ts). */
  start(name: string, dependencyWaitMs = 120_000): Promise<OperatorResult> {
    return this.run(() => startNow(name, dependencyWaitMs, this.operatorContext()));
  }

  /** What an operator start of `name` would start now, and which dependencies on their way up it would wait for (`?dry=true`). */
  startOrders(name: string): { startOrder: string[]; waitingFor: string[] } | undefined {
    return startOrders(name, { desired: this.desired, store: this.deps.store });
  }

  /** Read when the action's turn comes: the desired state then, not when it was asked for. */
  private operatorContext(): OperatorContext {
    return operatorContextOf(this.parts, this.desired, (d, stop, start) => this.executeOrders(d, stop, start));
  }

  private executeOrders(desired: DesiredState, stopOrder: string[], startOrder: string[]): Promise<ExecutionResult> {
    return execute(
      { stopOrder, startOrder, removed: new Set() },
      desired,
      executorDepsOf(this.parts, this.deps.store.appliedRevision()?.id ?? 'unknown'),
    );
  }

  /**
   * The health check of what runs `name` now: the worker's, which after a failed start-first roll is still the old
   * instance's, not the revision's. Undefined when no worker knows (then the revision's is the answer).
   */
  healthCheckOf(name: string): string | null | undefined {
    const c = this.workers.get(name)?.desired;
    return c ? (c.recipe.lifecycle.run.health?.check ?? null) : undefined;
  }

  /** Adopted after a restart and not health-checked yet (SPEC §5): nothing is to be said of its health. */
  unproven(name: string): boolean {
    return this.workers.get(name)?.unproven === true;
  }

  /** The pid of a component's current process instance, if it has one. */
  pidOf(name: string): number | undefined {
    return this.workers.get(name)?.pid;
  }

  /**
   * The agent is stopping: starts in progress give up now (their readiness waits end; nothing more is started), so
   * the apply in progress ends as interrupted instead of waiting out its start budgets. Outside the queue on purpose:
   * the queue is what it cuts short. What was spawned stays recorded as starting, and the next agent start stops it.
   */
  interrupt(): void {
    this.stopping = true;
    for (const w of this.workers.values()) w.detach();
  }

  /** The agent is exiting: stop supervising, leave every component running (its restart must restart nothing). */
  async detach(): Promise<void> {
    await this.run(async () => {
      for (const w of this.workers.values()) w.detach();
    });
  }

  /** Stops every component (used by --stop-on-exit for demos; never on a plain agent restart). */
  async stopAll(): Promise<void> {
    await this.run(async () => {
      // Dependents first, independent components at once, as an apply stops them.
      const order = everythingInStopOrder(this.deps.store);
      const result: ExecutionResult = { started: [], stopped: [], failed: [] };
      await stopAll(
        order,
        new Set(),
        executorDepsOf(this.parts, this.deps.store.appliedRevision()?.id ?? 'unknown'),
        result,
      );
      for (const name of order)
        if (this.deps.store.component(name))
          this.deps.store.recordState(name, 'stopped', 'the agent stopped everything on exit');
    });
  }
}
