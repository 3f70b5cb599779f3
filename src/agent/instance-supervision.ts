// A component's running instance under supervision, the half of a worker (component-worker.ts) that acts on what runs:
// the generation that makes late events harmless, the state writes, the exit watcher and the restart policy's
// decision, the crash restart and its prepared start, the health watch. ComponentWorker adds how instances start.
import { backoffMs } from '../core/backoff.js';
import type { DesiredComponent } from '../core/desired-state.js';
import { formatDuration } from '../core/duration.js';
import { decideRestart, refreshBudget, type ExitStatus } from '../core/restart-policy.js';
import type { Instance, InstanceRef, PreparedStart } from '../runtime/runtime.js';
import type { ComponentState } from '../store/state-store.js';
import { PreparedRestart } from './prepared-restart.js';
import { startBudgetMs, watchRunning } from './health-watch.js';
import { describeExit, isCleanExit, type StartOutcome, type WorkerDeps } from './worker-deps.js';

/**
 * Invariants: every change of generation (start, stop, adopt) invalidates the timers, monitors and
 * exit watchers of the previous one, so a late event never acts on an instance that is no longer
 * current; the state store is written before the worker acts (a record says `stopping` before the
 * signal, `starting` with the pid right after the spawn). Crash restarts run outside the engine's
 * queue (per-component, like kubelet's pod workers); everything that touches several components
 * (applies, operator actions, cascades) runs inside it.
 */
export abstract class InstanceSupervision {
  protected generation = 0;
  protected instance?: Instance;
  /** Aborted when the generation ends. */
  protected current = new AbortController();
  /** Cancels the watch of the running instance (health checks, the restart budget's spell). */
  protected stopWatch?: () => void;
  protected restartTimer?: NodeJS.Timeout;
  /** A restart's start prepared during its delay: discarded when the generation ends before it is used. */
  protected readonly prepared = new PreparedRestart();
  desired?: DesiredComponent;
  /** The revision that last started it, for every log line about it. */
  protected revision?: string;
  /**
   * Adopted after an agent restart and not yet health-checked: nothing may be said about it (SPEC §5) until
   * checkHealth() has probed it, at the first apply after the restart.
   */
  unproven = false;

  constructor(
    readonly name: string,
    protected readonly deps: WorkerDeps,
  ) {}

  /** What runs this component now, as the state store records it. */
  get instanceRef(): InstanceRef | undefined {
    return this.instance?.ref;
  }

  get pid(): number | undefined {
    return this.instance?.ref.kind === 'process' ? this.instance.ref.pid : undefined;
  }

  /** Starts instances until one is healthy within the budget (a crash restart's launch). */
  protected abstract launchUntilHealthy(
    gen: number,
    budgetMs: number,
    slot?: WorkerDeps['startSlot'],
    prepared?: Promise<PreparedStart | undefined>,
  ): Promise<StartOutcome>;

  protected state(state: ComponentState, reason?: string, extra: Record<string, unknown> = {}): void {
    this.deps.store.recordState(this.name, state, reason);
    const level =
      state === 'crash-looping' || state === 'failed'
        ? 'error'
        : state === 'unhealthy' || state === 'backoff'
          ? 'warn'
          : 'info';
    this.deps.log[level]({
      component: this.name,
      state,
      ...(reason && { reason }),
      ...(this.revision && { revision: this.revision }),
      ...extra,
    });
  }

  /** The next restart's start, prepared during its delay (prepared-restart.ts). */
  protected prepareAhead(delayMs: number): Promise<PreparedStart | undefined> | undefined {
    const c = this.desired;
    return (
      c &&
      this.prepared.ahead(
        delayMs,
        c,
        () => this.deps.runtime(c.recipe.lifecycle.run.type),
        this.deps.paths(this.name),
        this.current.signal,
      )
    );
  }

  /** Applies the restart policy to an exit, recording the outcome. */
  protected decide(exit: ExitStatus): { kind: 'restart'; delayMs: number } | { kind: 'stop'; reason: string } {
    const { store, now, random } = this.deps;
    const rec = store.component(this.name);
    const policy = this.desired!.recipe.lifecycle.run.restart_policy;
    const budget = {
      restarts: rec?.restarts ?? 0,
      ...(rec?.healthySince !== undefined && { healthySince: rec.healthySince }),
    };
    // A healthy spell long enough gives the budget back in the store too, before this restart is counted.
    const limits = this.deps.restartLimits;
    if (budget.restarts > 0 && refreshBudget(budget, now(), limits).restarts === 0) store.resetRestarts(this.name);
    const d = decideRestart(policy, exit, budget, now(), random, limits);
    if (d.kind === 'restart') {
      const n = store.recordRestart(this.name);
      this.state('backoff', `${describeExit(exit)}; restart ${n} in ${formatDuration(d.delayMs)}`);
      return { kind: 'restart', delayMs: d.delayMs };
    }
    if (d.kind === 'crash-looping') {
      const reason = `crash-looping after ${d.restarts} restarts without a healthy spell; held until a revision changes it or an operator restarts it`;
      store.recordHeld(this.name, true);
      this.state('crash-looping', reason);
      return { kind: 'stop', reason: `crash-looping after ${d.restarts} restarts` };
    }
    const reason = `${describeExit(exit)} (${d.why})`;
    this.state(isCleanExit(exit) ? 'stopped' : 'failed', reason);
    return { kind: 'stop', reason };
  }

  /**
   * How the instance ended, for the dashboard and GET /v1/components. Only shown, never decided on: a store that
   * cannot write it (a full disk) must not stand in the way of the restart, so the failure is only logged.
   */
  protected noteExit(exit: ExitStatus, at: number): void {
    try {
      this.deps.store.recordExit(this.name, { code: exit.code, signal: exit.signal, at });
    } catch (e) {
      this.deps.log.warn({ component: this.name, err: (e as Error).message }, 'cannot record the exit for the API');
    }
  }

  /** After readiness: watch for exits (crash restarts) and keep probing (running ↔ unhealthy). */
  protected supervise(gen: number, inst: Instance): void {
    void inst.exited.then((exit) => {
      if (gen !== this.generation) return;
      const exitAt = this.deps.now();
      this.unwatch();
      this.instance = undefined;
      this.unproven = false;
      this.release(inst);
      this.deps.log.warn(
        {
          component: this.name,
          code: exit.code,
          signal: exit.signal,
          ...(this.revision && { revision: this.revision }),
        },
        'exited',
      );
      this.noteExit(exit, exitAt);
      if (!this.desired) {
        // Adopted before any revision of this run was valid: nothing to restart it from; the next apply will.
        this.state(
          'stopped',
          `${describeExit(exit)} while the agent had no valid revision loaded; the next revision starts it`,
        );
        return;
      }
      const decideAndRestart = (attempt: number) => {
        if (gen !== this.generation) return;
        let d: ReturnType<InstanceSupervision['decide']>;
        try {
          d = this.decide(exit);
        } catch (e) {
          // The restart is counted in the store before it happens. A store that cannot write (a full disk) delays it
          // until it can: given up, the component would stay down for good, recorded as running.
          const delayMs = backoffMs(attempt, {
            baseMs: 1000,
            capMs: this.deps.restartLimits.maxBackoffMs,
            maxDoublings: 3,
          });
          this.deps.log.error(
            {
              component: this.name,
              err: e as Error,
              retry_in_ms: delayMs,
              ...(this.revision && { revision: this.revision }),
            },
            'cannot record the exit: the restart waits until the state store can write',
          );
          this.restartTimer = setTimeout(() => decideAndRestart(attempt + 1), delayMs);
          return;
        }
        // The delay counts from the exit, not from when its records were written.
        if (d.kind === 'restart') this.scheduleRestart(gen, Math.max(0, d.delayMs - (this.deps.now() - exitAt)));
      };
      decideAndRestart(0);
    });
    this.monitorHealth(gen);
  }

  protected scheduleRestart(gen: number, delayMs: number): void {
    clearTimeout(this.restartTimer);
    const prepared = this.prepareAhead(delayMs);
    this.restartTimer = setTimeout(() => {
      // A crash restart is this worker's own business and does not wait in the engine's queue: five
      // components that crash together come back together, and a revision does not wait behind them.
      // The generation makes it safe: an apply's stop or start invalidates it, and a stale spawn is
      // stopped before it is recorded. The cascade to hard dependents is the engine's, so it queues.
      if (gen !== this.generation || !this.desired) return;
      void this.launchUntilHealthy(gen, startBudgetMs(this.desired), undefined, prepared)
        .then((outcome) => {
          if (outcome.ok) this.deps.onRecovered(this.name);
        })
        .catch((e: Error) =>
          this.deps.log.error(
            { component: this.name, err: e, ...(this.revision && { revision: this.revision }) },
            'crash restart failed',
          ),
        );
    }, delayMs);
  }

  /** While an instance runs: its health watch (health-watch.ts), replacing any earlier one. */
  protected monitorHealth(gen: number): void {
    this.unwatch();
    const c = this.desired;
    if (!c || gen !== this.generation) return;
    this.stopWatch = watchRunning({
      name: this.name,
      desired: c,
      paths: this.deps.paths(this.name),
      store: this.deps.store,
      probe: this.deps.probe,
      now: this.deps.now,
      healthySpellMs: this.deps.restartLimits.healthySpellMs,
      onState: (state, reason) => this.state(state, reason),
    });
  }

  protected unwatch(): void {
    this.stopWatch?.();
    this.stopWatch = undefined;
  }

  /**
   * An instance that exited by itself: a container stays in the engine until removed (a process is simply gone), so
   * every restart would otherwise leave one behind. In the background: a restart does not wait for it.
   */
  protected release(inst: Instance): void {
    if (inst.ref.kind !== 'container') return;
    void this.deps
      .runtime('container')
      .stop(inst.ref, 0)
      .catch((e: Error) =>
        this.deps.log.warn(
          {
            component: this.name,
            container: (inst.ref as { id: string }).id.slice(0, 12),
            err: e.message,
            ...(this.revision && { revision: this.revision }),
          },
          'cannot remove an exited container',
        ),
      );
  }

  protected invalidate(): number {
    this.unproven = false;
    // Waits of the generation that ends (a readiness wait, a restart delay) end now rather than at their deadline.
    this.current.abort();
    this.current = new AbortController();
    this.unwatch();
    clearTimeout(this.restartTimer);
    this.prepared.discard();
    return ++this.generation;
  }
}
