// One component's life: install, start, health-gated readiness with restarts inside the start budget, health monitoring, crash restarts.
import type { DesiredComponent } from '../core/desired-state.js';
import { formatDuration } from '../core/duration.js';
import { decideRestart, refreshBudget, type ExitStatus, type RestartLimits } from '../core/restart-policy.js';
import type { Logger } from '../log/logger.js';
import type { ProbeResult } from '../runtime/probe.js';
import { isSameProcess } from '../runtime/proc-identity.js';
import type { ComponentPaths, Instance, InstanceRef, PreparedStart, Runtime } from '../runtime/runtime.js';
import type { ComponentState, StateStore } from '../store/state-store.js';
import { crashPoint } from './crash-point.js';
import { abortableSleep, NO_CHECK_SETTLE_MS, startBudgetMs, waitHealthy, watchRunning } from './health-watch.js';

export { NO_CHECK_SETTLE_MS, startBudgetMs } from './health-watch.js';

export interface WorkerDeps {
  store: StateStore;
  /** The runtime of a kind; a kind this device lacks throws KS_RUNTIME_UNAVAILABLE. */
  runtime: (kind: 'process' | 'container') => Runtime;
  paths: (name: string) => ComponentPaths;
  probe: (c: DesiredComponent, paths: ComponentPaths, timeoutMs: number, signal: AbortSignal) => Promise<ProbeResult>;
  log: Logger;
  now: () => number;
  random: () => number;
  graceMs: number;
  restartLimits: RestartLimits;
  /** A crash restart became healthy again: its hard dependents must follow (SPEC §4, at run time). */
  onRecovered: (name: string) => void;
  /**
   * Runs the CPU-bound part of an apply's start (an install, a spawn) under the device's concurrency limit
   * (engine.ts). The wait for health runs outside it: a slow database must not hold a slot that an independent
   * component could start in (most of a start is waiting, not CPU).
   */
  startSlot: <T>(work: () => Promise<T>) => Promise<T>;
}

export type StartOutcome = { ok: true } | { ok: false; reason: string };

type LaunchOutcome = { kind: 'exit'; exit: ExitStatus } | { kind: 'healthy' } | { kind: 'timeout' };

/**
 * A restart's start is prepared (user database, work directory, log files, the fork of the privilege wrapper) this
 * long before its delay ends, or at once for a shorter delay: at the delay's end only the program's exec remains.
 */
export const PREPARE_LEAD_MS = 250;

/**
 * Invariants: every change of generation (start, stop, adopt) invalidates the timers, monitors and
 * exit watchers of the previous one, so a late event never acts on an instance that is no longer
 * current; the state store is written before the worker acts (a record says `stopping` before the
 * signal, `starting` with the pid right after the spawn). Crash restarts run outside the engine's
 * queue (per-component, like kubelet's pod workers); everything that touches several components
 * (applies, operator actions, cascades) runs inside it.
 */
export class ComponentWorker {
  private generation = 0;
  private instance?: Instance;
  /** Aborted when the generation ends. */
  private current = new AbortController();
  /** Cancels the watch of the running instance (health checks, the restart budget's spell). */
  private stopWatch?: () => void;
  private restartTimer?: NodeJS.Timeout;
  /** A restart's start prepared during its delay: discarded when the generation ends before it is used. */
  private prepared?: Promise<PreparedStart | undefined>;
  desired?: DesiredComponent;
  /** The revision that last started it, for every log line about it. */
  private revision?: string;

  constructor(
    readonly name: string,
    private readonly deps: WorkerDeps,
  ) {}

  /** What runs this component now, as the state store records it. */
  get instanceRef(): InstanceRef | undefined {
    return this.instance?.ref;
  }

  get pid(): number | undefined {
    return this.instance?.ref.kind === 'process' ? this.instance.ref.pid : undefined;
  }

  private state(state: ComponentState, reason?: string, extra: Record<string, unknown> = {}): void {
    this.deps.store.recordState(this.name, state, reason);
    const level = state === 'crash-looping' || state === 'failed' ? 'error' : state === 'unhealthy' || state === 'backoff' ? 'warn' : 'info';
    this.deps.log[level]({ component: this.name, state, ...(reason && { reason }), ...(this.revision && { revision: this.revision }), ...extra });
  }

  /** Install and start a new instance, and wait until it is healthy within its start budget. */
  async start(c: DesiredComponent, position: number, revision: string): Promise<StartOutcome> {
    const gen = this.invalidate();
    this.desired = c;
    this.revision = revision;
    const { store } = this.deps;
    const prev = store.component(this.name);
    // The last instance stays on record until a new one replaces it, unless the component moved to another
    // runtime (a process became a container): that record would describe nothing the new runtime knows.
    this.record(c, position, revision, 'installing', prev?.instance?.kind === c.recipe.lifecycle.run.type ? prev.instance : undefined);
    this.deps.log.info({ component: this.name, state: 'installing', revision });
    const paths = this.deps.paths(this.name);
    try {
      await this.deps.startSlot(() => this.deps.runtime(c.recipe.lifecycle.run.type).install(c, paths, new AbortController().signal));
    } catch (e) {
      const reason = `install failed: ${(e as Error).message}`;
      this.state('failed', reason);
      return { ok: false, reason };
    }
    crashPoint('after-install');
    if (gen !== this.generation) return { ok: false, reason: 'superseded' };
    return this.launchUntilHealthy(gen, startBudgetMs(c), this.deps.startSlot);
  }

  /**
   * `update_strategy = "start-first"` (the zero-downtime roll): the new instance starts beside the old one, and only
   * once it is healthy is the old one stopped. A new instance that never gets healthy (or exits) is removed and the
   * old one keeps serving; the apply fails. The record keeps the old hash and instance until the new one is healthy,
   * so an agent that dies mid-roll adopts the old one and rolls again.
   */
  async startFirst(c: DesiredComponent, position: number, revision: string): Promise<StartOutcome> {
    const old = this.instance;
    if (!old) return this.start(c, position, revision);
    const previous = { desired: this.desired, revision: this.revision };
    const gen = this.invalidate();
    const { store, now } = this.deps;
    const paths = this.deps.paths(this.name);
    const runtime = this.deps.runtime(c.recipe.lifecycle.run.type);
    const log = { component: this.name, revision };
    this.deps.log.info({ ...log, old: refText(old.ref) }, 'rolling: starting the new instance beside the old one (start-first)');
    const keepOld = (reason: string): StartOutcome => {
      // The old one serves on, supervised again as before the roll.
      const g = this.invalidate();
      this.desired = previous.desired;
      this.revision = previous.revision;
      this.instance = old;
      this.supervise(g, old);
      this.deps.log.error({ ...log, old: refText(old.ref) }, `roll failed: ${reason}; the old instance keeps serving`);
      return { ok: false, reason: `${reason}; the old instance keeps serving (start-first)` };
    };
    try {
      await this.deps.startSlot(() => runtime.install(c, paths, new AbortController().signal));
    } catch (e) {
      return keepOld(`install failed: ${(e as Error).message}`);
    }
    let inst: Instance;
    try {
      inst = await this.deps.startSlot(() => runtime.start(c, paths));
    } catch (e) {
      return keepOld(`start failed: ${(e as Error).message}`);
    }
    if (gen !== this.generation) {
      await runtime.stop(inst.ref, this.deps.graceMs);
      return { ok: false, reason: 'superseded' };
    }
    this.deps.log.info({ ...log, state: 'starting', new: refText(inst.ref) }, 'rolling: new instance started');
    const abort = new AbortController();
    const outcome = await Promise.race([
      inst.exited.then(() => 'exited' as const),
      waitHealthy(c, paths, now() + startBudgetMs(c), AbortSignal.any([abort.signal, this.current.signal]), this.deps).then((ok) => (ok ? ('healthy' as const) : ('timeout' as const))),
    ]);
    abort.abort();
    if (outcome !== 'healthy' || gen !== this.generation) {
      await runtime.stop(inst.ref, this.deps.graceMs);
      if (gen !== this.generation) return { ok: false, reason: 'superseded' };
      return keepOld(outcome === 'exited' ? 'the new instance exited before it was healthy' : `the new instance was not healthy within its start budget of ${formatDuration(startBudgetMs(c))}`);
    }
    // Healthy: the new one takes over the record (through the same writes as any start, so that waits and metrics
    // see it), then the old one goes.
    this.desired = c;
    this.revision = revision;
    this.instance = inst;
    this.record(c, position, revision, 'starting', inst.ref);
    store.recordStart(this.name, inst.ref, now());
    store.recordHealthy(this.name, now());
    this.state('running');
    this.deps.log.info({ ...log, new: refText(inst.ref), old: refText(old.ref) }, 'rolling: new instance healthy; stopping the old one');
    this.supervise(gen, inst);
    await this.deps.runtime(old.ref.kind).stop(old.ref, this.deps.graceMs);
    return { ok: true };
  }

  /** The component's record for a new version: a revision that (re)starts a component gives it a fresh crash budget (SPEC §5). */
  private record(c: DesiredComponent, position: number, revision: string, state: 'installing' | 'starting', instance: InstanceRef | undefined): void {
    this.deps.store.upsertComponent({
      name: c.name,
      hash: c.hash,
      version: c.recipe.metadata.version,
      runtime: c.recipe.lifecycle.run.type,
      position,
      dependencies: c.dependencies.map((d) => ({ ...d })),
      state,
      restarts: 0,
      held: false,
      since: this.deps.now(),
      revision,
      ...(instance && { instance }),
      ...(c.inputs && { inputs: c.inputs }),
    });
  }

  /**
   * Starts instances until one is healthy, restarting on exit per the policy, within the start budget. `slot`: an
   * apply's spawns queue under the device's limit; a crash restart spawns at once (its delay is the policy's).
   */
  private async launchUntilHealthy(
    gen: number,
    budgetMs: number,
    slot: WorkerDeps['startSlot'] = (work) => work(),
    prepared?: Promise<PreparedStart | undefined>,
  ): Promise<StartOutcome> {
    const c = this.desired!;
    const { store, now } = this.deps;
    const paths = this.deps.paths(this.name);
    // The budget counts from the first spawn, not from before it: a slow spawn must not eat a component's time.
    let deadline: number | undefined;
    let next = prepared;
    for (;;) {
      let inst: Instance;
      try {
        // A restart prepared during its delay only has its program run now (the prepared process exists already).
        const ready = next && (await this.takePrepared(next));
        next = undefined;
        if (gen !== this.generation) {
          await ready?.discard();
          return { ok: false, reason: 'superseded' };
        }
        inst = ready ? ready.go() : await slot(() => this.deps.runtime(c.recipe.lifecycle.run.type).start(c, paths));
      } catch (e) {
        const reason = `start failed: ${(e as Error).message}`;
        this.state('failed', reason);
        return { ok: false, reason };
      }
      crashPoint('after-spawn');
      if (gen !== this.generation) {
        await this.deps.runtime(inst.ref.kind).stop(inst.ref, this.deps.graceMs);
        return { ok: false, reason: 'superseded' };
      }
      this.instance = inst;
      store.recordStart(this.name, inst.ref, now());
      crashPoint('after-start-record');
      deadline ??= now() + budgetMs;
      // Without a check, each launch must stay up for the settle time on its own.
      const launchDeadline = c.recipe.lifecycle.run.health ? deadline : now() + NO_CHECK_SETTLE_MS;
      this.deps.log.info({ component: this.name, state: 'starting', pid: this.pid, revision: this.revision });
      const abort = new AbortController();
      let outcome: LaunchOutcome = await Promise.race([
        inst.exited.then((exit) => ({ kind: 'exit' as const, exit })),
        waitHealthy(c, paths, launchDeadline, AbortSignal.any([abort.signal, this.current.signal]), this.deps).then((ok): { kind: 'healthy' } | { kind: 'timeout' } => (ok ? { kind: 'healthy' } : { kind: 'timeout' })),
      ]);
      abort.abort();
      if (gen !== this.generation) return { ok: false, reason: 'superseded' };
      // The exit event may lag the exit itself: a process that is gone (or a zombie) is not healthy.
      if (outcome.kind === 'healthy' && inst.ref.kind === 'process' && !isSameProcess(inst.ref.pid, inst.ref.startTime)) {
        const exit = await inst.exited;
        outcome = { kind: 'exit', exit };
      }
      if (outcome.kind === 'healthy') {
        store.recordHealthy(this.name, now());
        this.state('running');
        crashPoint('after-healthy');
        this.supervise(gen, inst);
        return { ok: true };
      }
      if (outcome.kind === 'timeout') {
        const reason = `not healthy within its start budget of ${formatDuration(startBudgetMs(c))}`;
        this.state('unhealthy', reason);
        this.supervise(gen, inst);
        return { ok: false, reason };
      }
      const exitAt = now();
      this.release(inst);
      this.noteExit(outcome.exit, exitAt);
      const decision = this.decide(outcome.exit);
      if (decision.kind !== 'restart') return { ok: false, reason: decision.reason };
      // The delay counts from the exit, not from when its records were written.
      const delayMs = Math.max(0, decision.delayMs - (now() - exitAt));
      if (now() + delayMs >= deadline) {
        this.scheduleRestart(gen, delayMs);
        return { ok: false, reason: `${describeExit(outcome.exit)} and did not become healthy within its start budget of ${formatDuration(startBudgetMs(c))}` };
      }
      next = this.prepareAhead(delayMs);
      await abortableSleep(delayMs, this.current.signal);
      if (gen !== this.generation) return { ok: false, reason: 'superseded' };
    }
  }

  /**
   * Prepares the next start so that it is ready when a delay of `delayMs` ends (PREPARE_LEAD_MS before it), when the
   * runtime can; undefined otherwise. Ends with the generation: invalidate() discards it unless a launch took it.
   */
  private prepareAhead(delayMs: number): Promise<PreparedStart | undefined> | undefined {
    const c = this.desired;
    if (!c) return undefined;
    let rt: Runtime;
    try {
      rt = this.deps.runtime(c.recipe.lifecycle.run.type);
    } catch {
      return undefined;
    }
    if (!rt.prepareStart) return undefined;
    const signal = this.current.signal;
    const paths = this.deps.paths(this.name);
    const p = (async () => {
      if (delayMs > PREPARE_LEAD_MS) await abortableSleep(delayMs - PREPARE_LEAD_MS, signal);
      if (signal.aborted) return undefined;
      return rt.prepareStart!(c, paths);
    })();
    p.catch(() => {}); // a failure surfaces where the launch takes it, as a start failure
    // One restart at a time: one that was prepared and never taken goes.
    void this.prepared?.then((old) => old?.discard()).catch(() => {});
    this.prepared = p;
    return p;
  }

  /** The launch takes the prepared start: from now on it is the launch's to run or discard. */
  private takePrepared(p: Promise<PreparedStart | undefined>): Promise<PreparedStart | undefined> {
    if (this.prepared === p) this.prepared = undefined;
    return p;
  }

  /** Applies the restart policy to an exit, recording the outcome. */
  private decide(exit: ExitStatus): { kind: 'restart'; delayMs: number } | { kind: 'stop'; reason: string } {
    const { store, now, random } = this.deps;
    const rec = store.component(this.name);
    const policy = this.desired!.recipe.lifecycle.run.restart_policy;
    const budget = { restarts: rec?.restarts ?? 0, ...(rec?.healthySince !== undefined && { healthySince: rec.healthySince }) };
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
  private noteExit(exit: ExitStatus, at: number): void {
    try {
      this.deps.store.recordExit(this.name, { code: exit.code, signal: exit.signal, at });
    } catch (e) {
      this.deps.log.warn({ component: this.name, err: (e as Error).message }, 'cannot record the exit for the API');
    }
  }

  /** After readiness: watch for exits (crash restarts) and keep probing (running ↔ unhealthy). */
  private supervise(gen: number, inst: Instance): void {
    void inst.exited.then((exit) => {
      if (gen !== this.generation) return;
      const exitAt = this.deps.now();
      this.unwatch();
      this.instance = undefined;
      this.release(inst);
      this.deps.log.warn({ component: this.name, code: exit.code, signal: exit.signal, ...(this.revision && { revision: this.revision }) }, 'exited');
      this.noteExit(exit, exitAt);
      if (!this.desired) {
        // Adopted before any revision of this run was valid: nothing to restart it from; the next apply will.
        this.state('stopped', `${describeExit(exit)} while the agent had no valid revision loaded; the next revision starts it`);
        return;
      }
      const decideAndRestart = (attempt: number) => {
        if (gen !== this.generation) return;
        let d: ReturnType<ComponentWorker['decide']>;
        try {
          d = this.decide(exit);
        } catch (e) {
          // The restart is counted in the store before it happens. A store that cannot write (a full disk) delays it
          // until it can: given up, the component would stay down for good, recorded as running.
          const delayMs = Math.min(this.deps.restartLimits.maxBackoffMs, 1000 * 2 ** Math.min(attempt, 3));
          this.deps.log.error({ component: this.name, err: e as Error, retry_in_ms: delayMs, ...(this.revision && { revision: this.revision }) }, 'cannot record the exit: the restart waits until the state store can write');
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

  private scheduleRestart(gen: number, delayMs: number): void {
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
        .catch((e: Error) => this.deps.log.error({ component: this.name, err: e, ...(this.revision && { revision: this.revision }) }, 'crash restart failed'));
    }, delayMs);
  }

  /** While an instance runs: its health watch (health-watch.ts), replacing any earlier one. */
  private monitorHealth(gen: number): void {
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

  private unwatch(): void {
    this.stopWatch?.();
    this.stopWatch = undefined;
  }

  /** Re-attaches to an instance that survived an agent restart: no restart, supervision resumes. */
  adopt(inst: Instance, c: DesiredComponent | undefined, revision?: string): void {
    const gen = this.invalidate();
    this.revision = revision;
    this.instance = inst;
    this.desired = c;
    this.supervise(gen, inst);
  }

  /** A new revision with the same hash: keep the instance, take the new description (positions, deps). */
  refresh(c: DesiredComponent): void {
    const hadNone = this.desired === undefined;
    this.desired = c;
    if (hadNone && this.instance) this.monitorHealth(this.generation);
  }

  /** Stops the instance (the whole process group), recording `stopping` first. */
  async stop(): Promise<void> {
    this.invalidate();
    const inst = this.instance;
    this.instance = undefined;
    if (!inst) return;
    this.deps.store.recordState(this.name, 'stopping');
    this.deps.log.info({ component: this.name, state: 'stopping', pid: inst.ref.kind === 'process' ? inst.ref.pid : undefined, ...(this.revision && { revision: this.revision }) });
    await this.deps.runtime(inst.ref.kind).stop(inst.ref, this.deps.graceMs);
  }

  /** Stops timers and monitors without touching the instance: the agent's own exit leaves components running. */
  detach(): void {
    this.invalidate();
  }

  /**
   * An instance that exited by itself: a container stays in the engine until removed (a process is simply gone), so
   * every restart would otherwise leave one behind. In the background: a restart does not wait for it.
   */
  private release(inst: Instance): void {
    if (inst.ref.kind !== 'container') return;
    void this.deps
      .runtime('container')
      .stop(inst.ref, 0)
      .catch((e: Error) => this.deps.log.warn({ component: this.name, container: (inst.ref as { id: string }).id.slice(0, 12), err: e.message, ...(this.revision && { revision: this.revision }) }, 'cannot remove an exited container'));
  }

  private invalidate(): number {
    // Waits of the generation that ends (a readiness wait, a restart delay) end now rather than at their deadline.
    this.current.abort();
    this.current = new AbortController();
    this.unwatch();
    clearTimeout(this.restartTimer);
    // A start prepared for a restart that will not happen: its waiting process goes.
    const prepared = this.prepared;
    this.prepared = undefined;
    void prepared?.then((p) => p?.discard()).catch(() => {});
    return ++this.generation;
  }
}

function isCleanExit(exit: ExitStatus): boolean {
  return exit.code === 0 && exit.signal === null;
}

export function describeExit(exit: ExitStatus): string {
  if (exit.code === null && exit.signal === null) return 'exited (status unknown: the agent adopted it and is not its parent)';
  return exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
}

/** `pid 41002` or a short container id, for log lines. */
function refText(ref: InstanceRef): string {
  return ref.kind === 'process' ? `pid ${ref.pid}` : ref.id.slice(0, 12);
}
