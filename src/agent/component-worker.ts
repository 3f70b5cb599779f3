// One component's life: install, start, health-gated readiness with restarts inside the start budget, the start-first
// roll, adoption after an agent restart and the health check that proves it. Supervision of what runs (exits, crash
// restarts, the health watch) is its base, instance-supervision.ts.
import type { DesiredComponent } from '../core/desired-state.js';
import { formatDuration } from '../core/duration.js';
import type { ExitStatus } from '../core/restart-policy.js';
import { isSameProcess } from '../runtime/proc-identity.js';
import type { Instance, InstanceRef, PreparedStart } from '../runtime/runtime.js';
import { crashPoint } from './crash-point.js';
import { NO_CHECK_SETTLE_MS, abortableSleep, startBudgetMs, waitHealthy } from './health-watch.js';
import { InstanceSupervision } from './instance-supervision.js';
import { rollStartFirst } from './start-first-roll.js';
import { describeExit, type StartOutcome, type WorkerDeps } from './worker-deps.js';

export { NO_CHECK_SETTLE_MS, startBudgetMs } from './health-watch.js';
export { PREPARE_LEAD_MS } from './prepared-restart.js';
export { describeExit, type StartOutcome, type WorkerDeps } from './worker-deps.js';

type LaunchOutcome = { kind: 'exit'; exit: ExitStatus } | { kind: 'healthy' } | { kind: 'timeout' };

export class ComponentWorker extends InstanceSupervision {
  constructor(name: string, deps: WorkerDeps) {
    super(name, deps);
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
    this.record(
      c,
      position,
      revision,
      'installing',
      prev?.instance?.kind === c.recipe.lifecycle.run.type ? prev.instance : undefined,
    );
    this.deps.log.info({ component: this.name, state: 'installing', revision });
    const paths = this.deps.paths(this.name);
    try {
      await this.deps.startSlot(() =>
        this.deps.runtime(c.recipe.lifecycle.run.type).install(c, paths, new AbortController().signal),
      );
    } catch (e) {
      const reason = `install failed: ${(e as Error).message}`;
      this.state('failed', reason);
      return { ok: false, reason };
    }
    crashPoint('after-install');
    if (gen !== this.generation) return { ok: false, reason: 'superseded' };
    return this.launchUntilHealthy(gen, startBudgetMs(c), this.deps.startSlot);
  }

  /** `update_strategy = "start-first"`: the new instance beside the old one until healthy (start-first-roll.ts). */
  async startFirst(c: DesiredComponent, position: number, revision: string): Promise<StartOutcome> {
    const old = this.instance;
    if (!old) return this.start(c, position, revision);
    const previous = { desired: this.desired, revision: this.revision };
    const gen = this.invalidate();
    return rollStartFirst({
      name: this.name,
      deps: this.deps,
      c,
      revision,
      old,
      current: () => gen === this.generation,
      signal: this.current.signal,
      keepOld: () => {
        const g = this.invalidate();
        this.desired = previous.desired;
        this.revision = previous.revision;
        this.instance = old;
        this.supervise(g, old);
      },
      takeOver: (inst) => {
        const { store, now } = this.deps;
        this.desired = c;
        this.revision = revision;
        this.instance = inst;
        this.record(c, position, revision, 'starting', inst.ref);
        store.recordStart(this.name, inst.ref, now());
        store.recordHealthy(this.name, now());
        this.state('running');
        this.supervise(gen, inst);
      },
    });
  }

  /** The component's record for a new version: a revision that (re)starts a component gives it a fresh crash budget (SPEC §5). */
  private record(
    c: DesiredComponent,
    position: number,
    revision: string,
    state: 'installing' | 'starting',
    instance: InstanceRef | undefined,
  ): void {
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
  protected async launchUntilHealthy(
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
        const ready = next && (await this.prepared.take(next));
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
        waitHealthy(c, paths, launchDeadline, AbortSignal.any([abort.signal, this.current.signal]), this.deps).then(
          (ok): { kind: 'healthy' } | { kind: 'timeout' } => (ok ? { kind: 'healthy' } : { kind: 'timeout' }),
        ),
      ]);
      abort.abort();
      if (gen !== this.generation) return { ok: false, reason: 'superseded' };
      // The exit event may lag the exit itself: a process that is gone (or a zombie) is not healthy.
      if (
        outcome.kind === 'healthy' &&
        inst.ref.kind === 'process' &&
        !isSameProcess(inst.ref.pid, inst.ref.startTime)
      ) {
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
        return {
          ok: false,
          reason: `${describeExit(outcome.exit)} and did not become healthy within its start budget of ${formatDuration(startBudgetMs(c))}`,
        };
      }
      next = this.prepareAhead(delayMs);
      await abortableSleep(delayMs, this.current.signal);
      if (gen !== this.generation) return { ok: false, reason: 'superseded' };
    }
  }

  /** Re-attaches to an instance that survived an agent restart: no restart, supervision resumes. */
  adopt(inst: Instance, c: DesiredComponent | undefined, revision?: string): void {
    const gen = this.invalidate();
    this.unproven = true;
    this.revision = revision;
    this.instance = inst;
    this.desired = c;
    this.supervise(gen, inst);
  }

  /** A new revision with the same hash: keep the instance, take the new description (positions, deps). */
  refresh(c: DesiredComponent): void {
    const hadNone = this.desired === undefined;
    this.desired = c;
    // An unproven instance is watched once checkHealth() has said what it is.
    if (hadNone && this.instance && !this.unproven) this.monitorHealth(this.generation);
  }

  /**
   * Probes the running instance until healthy within its start budget, and records what it found: `running`, or
   * `unhealthy` with why. For an instance adopted after a restart (SPEC §5: never assumed healthy) and one the monitor
   * found unhealthy when an apply leaves it untouched. The monitor resumes afterwards.
   */
  async checkHealth(): Promise<StartOutcome> {
    const c = this.desired;
    const inst = this.instance;
    if (!c || !inst) return { ok: false, reason: 'not running' };
    const gen = this.generation;
    const adopted = this.unproven;
    const budget = startBudgetMs(c);
    if (adopted) crashPoint('adopted-health-wait');
    const abort = new AbortController();
    const ok = await Promise.race([
      inst.exited.then(() => false),
      waitHealthy(
        c,
        this.deps.paths(this.name),
        this.deps.now() + budget,
        AbortSignal.any([abort.signal, this.current.signal]),
        this.deps,
      ),
    ]);
    abort.abort();
    if (gen !== this.generation) return { ok: false, reason: 'superseded' };
    // It exited meanwhile: its worker restarts it (or not) by the policy, and says so itself.
    if (this.instance !== inst) return { ok: false, reason: `exited${adopted ? ' after the agent restarted' : ''}` };
    this.unproven = false;
    const reason = `not healthy within its start budget of ${formatDuration(budget)}${adopted ? ' after the agent restarted' : ''}`;
    if (ok) {
      if (this.deps.store.component(this.name)?.state !== 'running') {
        this.deps.store.recordHealthy(this.name, this.deps.now());
        this.state('running');
      }
    } else this.state('unhealthy', reason);
    this.monitorHealth(gen);
    return ok ? { ok: true } : { ok: false, reason };
  }

  /** Stops the instance (the whole process group), recording `stopping` first. */
  async stop(): Promise<void> {
    this.invalidate();
    const inst = this.instance;
    this.instance = undefined;
    if (!inst) return;
    this.deps.store.recordState(this.name, 'stopping');
    this.deps.log.info({
      component: this.name,
      state: 'stopping',
      pid: inst.ref.kind === 'process' ? inst.ref.pid : undefined,
      ...(this.revision && { revision: this.revision }),
    });
    await this.deps.runtime(inst.ref.kind).stop(inst.ref, this.deps.graceMs);
  }

  /** Stops timers and monitors without touching the instance: the agent's own exit leaves components running. */
  detach(): void {
    this.invalidate();
  }
}
