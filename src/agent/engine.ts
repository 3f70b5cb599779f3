// The one writer: every change to what runs (a revision, a crash cascade, later the API) runs here, one at a time.
import type { DesiredComponent, DesiredState } from '../core/desired-state.js';
import { diff, type Reconcile } from '../core/diff.js';
import { allDependents, rollbackRelevant, withGroupsRestored } from '../core/group-rollback.js';
import { restartCascade, unitsOf, type RestartOrders } from '../core/restart-cascade.js';
import pLimit from 'p-limit';
import type { Logger } from '../log/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import { ComponentWorker, type WorkerDeps } from './component-worker.js';
import { crashPoint } from './crash-point.js';
import { execute, stopAll, type ExecutionResult } from './executor.js';
import { sweepOrphans } from './orphan-sweep.js';

export interface EngineDeps extends Omit<WorkerDeps, 'onRecovered' | 'log' | 'startSlot'> {
  log: Logger;
  /** How many installs and spawns run at once; the waits for health are not counted (component-worker.ts). */
  concurrency: number;
}

export interface RevisionInfo {
  id: string;
  source: string;
  planFile: string;
  /** The fleet.toml target the plan came from (SPEC §13). */
  target?: string;
  /** What the plan was chosen with (agent/device-identity.ts). */
  identity?: string;
  signedAt?: number;
  /** The keys whose signatures counted. */
  signers?: string[];
  /** The device's rollout wave for this commit (SPEC §14). */
  wave?: string;
  unsigned: boolean;
}

export interface ApplyResult {
  reconcile: Reconcile;
  execution: ExecutionResult;
  outcome: 'success' | 'failure';
  summary: string;
}

/** What an operator action did: the orders of SPEC §10 and how the execution went. */
export interface OperatorResult extends RestartOrders {
  execution: ExecutionResult;
}

export class Engine {
  private queue: Promise<unknown> = Promise.resolve();
  readonly workers = new Map<string, ComponentWorker>();
  desired?: DesiredState;
  private readonly agentLog: Logger;
  /** Set by interrupt(): the agent is stopping. */
  private stopping = false;
  private readonly supLog: Logger;
  /** Shared by every worker: the limit is the device's, not a component's. */
  private readonly startSlot: WorkerDeps['startSlot'];

  constructor(private readonly deps: EngineDeps) {
    this.agentLog = deps.log.child({ module: 'agent' });
    this.supLog = deps.log.child({ module: 'supervisor' });
    const limit = pLimit(Math.max(1, deps.concurrency));
    this.startSlot = (work) => limit(work);
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
        onRecovered: (n) => void this.run(() => this.cascadeAfterRecovery(n)),
      });
      this.workers.set(name, w);
    }
    return w;
  }

  /**
   * At agent start: re-attach to every recorded instance that is still the same process (pid and
   * start time) and mark the rest stopped. Nothing healthy is restarted.
   */
  async adoptAll(runtime: (kind: 'process' | 'container') => Runtime | undefined, ownerTag?: string): Promise<void> {
    // First the processes no record accounts for (spawned just before a crash): they are ours, and unknown.
    if (ownerTag !== undefined) {
      const recorded = this.deps.store
        .components()
        .flatMap((r) => (r.instance?.kind === 'process' ? [{ pid: r.instance.pid, startTime: r.instance.startTime }] : []));
      for (const o of await sweepOrphans(ownerTag, recorded))
        this.agentLog.warn({ component: o.component, pid: o.pid }, 'removed an unrecorded process this agent started before it stopped');
    }
    for (const rec of this.deps.store.components()) {
      const rt = rec.instance ? runtime(rec.instance.kind) : undefined;
      const inst = rec.instance && rt ? await rt.adopt(rec.instance) : undefined;
      const proven = rec.state === 'running' || rec.state === 'unhealthy' || rec.state === 'backoff';
      const live = proven || rec.state === 'starting' || rec.state === 'installing' || rec.state === 'stopping';
      if (inst && proven) {
        this.worker(rec.name).adopt(inst, undefined, rec.revision);
        this.agentLog.info({ component: rec.name, pid: inst.ref.kind === 'process' ? inst.ref.pid : undefined, container: inst.ref.kind === 'container' ? inst.ref.id.slice(0, 12) : undefined, revision: rec.revision }, 'adopted running instance');
      } else if (live) {
        // Caught mid-start or mid-stop: up but unproven. Stop it without adopting; the next reconcile starts it afresh.
        if (inst && rt) await rt.stop(inst.ref, this.deps.graceMs);
        this.deps.store.recordState(rec.name, 'stopped', inst ? 'the agent stopped while it was starting or stopping' : 'not running after the agent restarted');
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
        this.agentLog.warn({ err: (e as Error).message }, 'cannot list this agent\'s containers: leftovers are removed at the next start');
      }
      const kept = new Set([...this.workers.values()].flatMap((w) => (w.instanceRef?.kind === 'container' ? [w.instanceRef.id] : [])));
      for (const o of owned) {
        if (kept.has(o.id)) continue;
        await container.removeOwned(o.id).catch((e: Error) => this.agentLog.warn({ component: o.component, container: o.id, err: e.message }, 'cannot remove a leftover container'));
        this.agentLog.info({ component: o.component, container: o.id.slice(0, 12) }, 'removed a container this agent owned but no longer runs');
      }
    }
  }

  /** Diff the revision against what runs and carry it out (SPEC §4). */
  apply(revision: DesiredState, rev: RevisionInfo, hooks: { onReconcile?: (r: Reconcile) => void } = {}): Promise<ApplyResult> {
    return this.run(async () => {
      const { store, now } = this.deps;
      // What grouped units last ran healthy: what a composite's rollback goes back to, even after an agent restart or
      // a crash in the middle of an apply (a spec is kept only once its unit started healthy).
      const previous = store.specs();
      const { state: desired, held } = this.heldBack(revision, rev.id, previous);
      const reconcile = diff(desired, store.actualState());
      hooks.onReconcile?.(reconcile);
      this.agentLog.info({ revision: rev.id, stop_order: reconcile.stopOrder, start_order: reconcile.startOrder, no_touch: reconcile.noTouch }, 'reconcile plan');
      const historyId = store.beginApply({ revision: rev.id, planFile: rev.planFile, ...(rev.target !== undefined && { target: rev.target }), startedAt: now(), reconcile });
      store.setAppliedRevision({ id: rev.id, source: rev.source, planFile: rev.planFile, ...(rev.target !== undefined && { target: rev.target }), ...(rev.identity !== undefined && { identity: rev.identity }), unsigned: rev.unsigned, appliedAt: now(), ...(rev.signedAt !== undefined && { signedAt: rev.signedAt }), ...(rev.signers !== undefined && { signers: rev.signers }), ...(rev.wave !== undefined && { wave: rev.wave }) });
      crashPoint('after-begin-apply');

      // Untouched components keep their instance; they take the new description (position, dependencies).
      const byName = new Map(desired.components.map((c) => [c.name, c]));
      const untouched = new Set(reconcile.noTouch);
      const kept = new Set(previous.map((c) => c.name));
      desired.startOrder.forEach((name, position) => {
        if (!untouched.has(name)) return;
        const c = byName.get(name)!;
        const rec = store.component(name);
        if (rec) store.upsertComponent({ ...rec, position, dependencies: c.dependencies.map((d) => ({ ...d })) });
        // A unit outside any group that binds another's exports, running unchanged with no spec kept yet, gets its own.
        if (rec && !kept.has(name) && c.group === undefined && rollbackRelevant(c) && rec.state === 'running') store.recordSpec(name, c);
        this.workers.get(name)?.refresh(c);
        if (rec?.state === 'running' || rec?.state === 'unhealthy')
          this.agentLog.info({ component: name, revision: rev.id }, 'reusing existing running instance (no restart)');
      });

      const removed = new Set(Object.entries(reconcile.reasonCodes).filter(([, r]) => r.kind === 'removed').map(([n]) => n));
      const execution = await execute(
        { stopOrder: reconcile.stopOrder, startOrder: reconcile.startOrder, removed },
        desired,
        { store, workers: this.workers, worker: (n) => this.worker(n), log: this.supLog, concurrency: this.deps.concurrency, revision: rev.id, stopping: () => this.stopping },
      );
      for (const name of removed) if (store.component(name)) store.removeComponent(name);
      this.desired = desired;
      // Members not healthy after the apply (failed now, or left unhealthy by an update a crash cut short).
      const down = this.stopping ? [] : this.downMembers(desired, execution);
      const rolledBack = down.length ? await this.rollBackGroups(desired, previous, down, rev.id) : [];
      this.keepSpecs(this.desired, execution.started);

      // A member left down by an earlier, cut-short update fails this apply only when its composite was rolled back.
      const groupOf = new Map(desired.components.map((c) => [c.name, c.group]));
      const failures = [...execution.failed, ...down.filter((d) => !execution.failed.some((f) => f.name === d.name) && rolledBack.includes(groupOf.get(d.name) ?? ''))];
      const outcome = failures.length === 0 && held.length === 0 ? 'success' : 'failure';
      const heldText = held.length ? `${held.join(', ')} held at ${held.length === 1 ? 'its' : 'their'} previous members: this revision could not update ${held.length === 1 ? 'it' : 'them'}` : '';
      const summary = this.stopping && outcome === 'failure'
        ? 'interrupted: the agent stopped during this apply'
        : outcome === 'success'
          ? `${execution.started.length} started, ${execution.stopped.length} stopped, ${reconcile.noTouch.length} untouched`
          : `failed: ${[...failures.map((f) => `${f.name} (${f.reason})`), ...rolledBack.map((g) => `${g} rolled back to its previous members`), ...(heldText ? [heldText] : [])].join('; ')}`;
      crashPoint('before-finish-apply');
      store.finishApply(historyId, { finishedAt: now(), outcome, summary, failed: failures });
      if (outcome === 'success') {
        const all = store.components().every((c) => c.state === 'running');
        this.supLog.info(all ? 'all components running' : 'apply finished');
      } else this.agentLog.error({ revision: rev.id, failed: execution.failed.map((f) => f.name) }, summary.startsWith('failed: ') ? `apply ${summary}` : `apply failed: ${summary}`);
      return { reconcile, execution, outcome, summary };
    });
  }

  /**
   * A revision that could not update a group (its rollback is recorded) leaves that group at its previous members
   * when it is applied again (an agent restart, a resync): retrying would restart a healthy composite only to fail
   * again. Any other revision is a new attempt, and clears the record.
   */
  private heldBack(revision: DesiredState, id: string, previous: readonly DesiredComponent[]): { state: DesiredState; held: string[] } {
    const { store } = this.deps;
    const holds = store.groupRollbacks();
    if (holds.length === 0) return { state: revision, held: [] };
    if (holds.some((h) => h.revision !== id)) {
      store.clearGroupRollbacks();
      return { state: revision, held: [] };
    }
    const groups = holds.map((h) => h.group).filter((g) => revision.groups?.some((x) => x.name === g) && previous.some((c) => c.group === g));
    if (groups.length === 0) return { state: revision, held: [] };
    this.agentLog.warn({ revision: id, groups }, 'this revision could not update these composites: they stay at their previous members until another revision');
    return { state: withGroupsRestored(revision, groups, previous), held: groups };
  }

  /**
   * The next rollback's point of return. A group's members are kept together, and only once every one of them runs
   * healthy (a set that never ran healthy as a whole is nothing to go back to); a unit outside any group that binds
   * another's exports is kept when it started healthy.
   */
  private keepSpecs(state: DesiredState, started: readonly string[]): void {
    const { store } = this.deps;
    for (const g of state.groups ?? []) {
      if (g.kind === 'replicas' && g.members.length === 0) continue;
      const members = state.components.filter((c) => c.group === g.name);
      if (members.length && members.every((c) => store.component(c.name)?.state === 'running')) for (const c of members) store.recordSpec(c.name, c);
    }
    const byName = new Map(state.components.map((c) => [c.name, c]));
    for (const name of started) {
      const c = byName.get(name);
      if (c && c.group === undefined && rollbackRelevant(c) && store.component(name)?.state === 'running') store.recordSpec(name, c);
    }
  }

  /**
   * Members of composites (and services groups) that are not healthy once an apply has run: those that failed in it,
   * and those still unhealthy or failed from an update a crash cut short (the agent adopted them, so nothing failed now).
   * Held ones (stopped by an operator, crash-looping) are not the update's doing.
   */
  private downMembers(state: DesiredState, execution: ExecutionResult): Array<{ name: string; reason: string }> {
    const failed = new Map(execution.failed.map((f) => [f.name, f.reason]));
    const out: Array<{ name: string; reason: string }> = [];
    for (const g of state.groups ?? []) {
      if (g.kind === 'replicas') continue;
      for (const m of g.members) {
        const rec = this.deps.store.component(m);
        if (failed.has(m)) out.push({ name: m, reason: failed.get(m)! });
        else if (rec && !rec.held && rec.state !== 'running' && rec.state !== 'crash-looping') out.push({ name: m, reason: `${rec.state} after the update` });
      }
    }
    return out;
  }

  /**
   * A composite (or a recipe's services) is updated as one unit: when one of its new members failed, every member
   * goes back to what it last ran healthy, what binds their exports goes back with them, and what depends on them is
   * started again. Returns the groups rolled back. A group with nothing kept, or whose members did not change, has
   * nothing to undo.
   */
  private async rollBackGroups(desired: DesiredState, previous: readonly DesiredComponent[], down: ReadonlyArray<{ name: string }>, revision: string): Promise<string[]> {
    const failed = new Set(down.map((f) => f.name));
    const before = new Map(previous.map((c) => [c.name, c]));
    const groups: string[] = [];
    for (const g of desired.groups ?? []) {
      if (g.kind === 'replicas' || !g.members.some((m) => failed.has(m))) continue;
      const old = previous.filter((c) => c.group === g.name);
      const changed = g.members.some((m) => before.get(m)?.hash !== desired.components.find((c) => c.name === m)?.hash) || old.some((o) => !g.members.includes(o.name));
      if (old.length && changed) groups.push(g.name);
    }
    if (!groups.length) return [];
    const { store } = this.deps;
    const state = withGroupsRestored(desired, groups, previous);
    const members = new Set(state.components.filter((c) => c.group !== undefined && groups.includes(c.group)).map((c) => c.name));
    const undone = desired.components.filter((c) => c.group !== undefined && groups.includes(c.group) && !members.has(c.name)).map((c) => c.name);
    const scope = new Set([...members, ...undone, ...allDependents(state, members)]);
    const r = diff(state, store.actualState());
    const removed = new Set(undone);
    this.agentLog.warn({ revision, groups, start_order: r.startOrder.filter((n) => scope.has(n)) }, 'a new member never got healthy: rolling the composite back to its previous members');
    const again = await execute(
      { stopOrder: r.stopOrder.filter((n) => scope.has(n)), startOrder: r.startOrder.filter((n) => scope.has(n)), removed },
      state,
      { store, workers: this.workers, worker: (n) => this.worker(n), log: this.supLog, concurrency: this.deps.concurrency, revision, stopping: () => this.stopping },
    );
    for (const name of removed) if (store.component(name)) store.removeComponent(name);
    for (const g of groups) store.recordGroupRollback(g, revision);
    this.desired = state;
    if (again.failed.length) this.agentLog.error({ revision, failed: again.failed.map((f) => f.name) }, 'the rollback did not bring every previous member back');
    return groups;
  }

  /** The orders an operator restart of `name` would carry out (the API's `?dry=true`); undefined for an unknown name. */
  restartOrders(name: string): RestartOrders | undefined {
    const units = this.desired && unitsOf(this.desired, name);
    return units && restartCascade(this.desired!, units);
  }

  /** The units `name` stands for in the applied revision (a group's members), or undefined for an unknown name. */
  unitsOf(name: string): string[] | undefined {
    return this.desired && unitsOf(this.desired, name);
  }

  /**
   * An operator restart: `name` and its transitive hard dependents, stopped dependents-first and
   * started once their dependencies are healthy. Clears a crash-loop hold (SPEC §5).
   */
  restart(name: string): Promise<OperatorResult> {
    return this.run(async () => {
      const { desired, units } = this.requireDesired(name);
      const orders = restartCascade(desired, units);
      this.agentLog.info({ component: name, stop_order: orders.stopOrder, start_order: orders.startOrder, revision: this.deps.store.appliedRevision()?.id }, 'restart requested');
      const execution = await this.executeOrders(desired, orders.stopOrder, orders.startOrder);
      return { ...orders, execution };
    });
  }

  /** Stops `name` after its hard dependents, and holds them all stopped until started again (or changed by a revision). */
  stop(name: string): Promise<OperatorResult> {
    return this.run(async () => {
      const { desired, units } = this.requireDesired(name);
      const { stopOrder } = restartCascade(desired, units);
      const own = new Set(units);
      this.agentLog.info({ component: name, stop_order: stopOrder, revision: this.deps.store.appliedRevision()?.id }, 'stop requested');
      const execution = await this.executeOrders(desired, stopOrder, []);
      for (const n of stopOrder) {
        if (!this.deps.store.component(n)) continue;
        this.deps.store.recordHeld(n, true);
        this.deps.store.recordState(n, 'stopped', own.has(n) ? 'stopped by an operator' : `stopped by an operator with its hard dependency ${name}`);
      }
      return { stopOrder, startOrder: [], execution };
    });
  }

  /**
   * Starts `name` once its dependencies are healthy, releasing an operator's or a crash loop's hold. Dependencies
   * that are down (stopped, failed, crash-looping) are started first, in dependency order; ones that are on their
   * way up (a crash restart in progress) are waited for, up to `dependencyWaitMs`.
   */
  start(name: string, dependencyWaitMs = 120_000): Promise<OperatorResult> {
    return this.run(async () => {
      const { store } = this.deps;
      const { desired, startOrder, waitingFor: coming, running, up } = this.startPlan(name);
      this.agentLog.info({ component: name, start_order: startOrder, waiting_for: coming, revision: this.deps.store.appliedRevision()?.id }, running ? 'start requested: already running' : 'start requested');
      // A dependency in a crash restart belongs to its worker: wait for it rather than start it a second time.
      const deadline = this.deps.now() + dependencyWaitMs;
      while (coming.some((n) => store.component(n)?.state !== 'running' && up(n)) && this.deps.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const execution = await this.executeOrders(desired, [], startOrder);
      return { stopOrder: [], startOrder, execution };
    });
  }

  /** What an operator start of `name` would start now, and which dependencies on their way up it would wait for (`?dry=true`). */
  startOrders(name: string): { startOrder: string[]; waitingFor: string[] } | undefined {
    if (!this.desired || !unitsOf(this.desired, name)) return undefined;
    const { startOrder, waitingFor } = this.startPlan(name);
    return { startOrder, waitingFor };
  }

  /** The start of `name` as the store stands: its own units not running, and its dependencies down (transitively). */
  private startPlan(name: string) {
    const { desired, units } = this.requireDesired(name);
    const { store } = this.deps;
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
    const up = (n: string) => ['running', 'starting', 'unhealthy', 'installing', 'backoff'].includes(store.component(n)?.state ?? 'stopped');
    const isRunning = (n: string) => ['running', 'starting', 'unhealthy'].includes(store.component(n)?.state ?? 'stopped');
    const startOrder = desired.startOrder.filter((n) => (own.has(n) && !isRunning(n)) || (needed.has(n) && !up(n)));
    const waitingFor = desired.startOrder.filter((n) => needed.has(n) && up(n) && store.component(n)?.state !== 'running');
    return { desired, startOrder, waitingFor, running: units.every(isRunning), up };
  }

  private requireDesired(name: string): { desired: DesiredState; units: string[] } {
    const desired = this.desired;
    const units = desired && unitsOf(desired, name);
    if (!desired || !units) throw Object.assign(new Error(`no component "${name}" in the applied revision`), { code: 'KS_COMPONENT_NOT_FOUND' });
    return { desired, units };
  }

  private executeOrders(desired: DesiredState, stopOrder: string[], startOrder: string[]): Promise<ExecutionResult> {
    return execute({ stopOrder, startOrder, removed: new Set() }, desired, {
      store: this.deps.store,
      workers: this.workers,
      worker: (n) => this.worker(n),
      log: this.supLog,
      concurrency: this.deps.concurrency,
      revision: this.deps.store.appliedRevision()?.id ?? 'unknown',
      stopping: () => this.stopping,
    });
  }

  /**
   * The health check of what runs `name` now: the worker's, which after a failed start-first roll is still the old
   * instance's, not the revision's. Undefined when no worker knows (then the revision's is the answer).
   */
  healthCheckOf(name: string): string | null | undefined {
    const c = this.workers.get(name)?.desired;
    return c ? (c.recipe.lifecycle.run.health?.check ?? null) : undefined;
  }

  /** The pid of a component's current process instance, if it has one. */
  pidOf(name: string): number | undefined {
    return this.workers.get(name)?.pid;
  }

  /** After a crash restart is healthy again, restart its hard dependents (transitively); ordering dependents stay. */
  private async cascadeAfterRecovery(name: string): Promise<void> {
    const desired = this.desired;
    if (!desired) return;
    const dependents = new Set<string>();
    const byName = new Map(desired.components.map((c) => [c.name, c]));
    for (const n of desired.startOrder) {
      const c = byName.get(n)!;
      if (c.dependencies.some((d) => d.type === 'hard' && (d.component === name || dependents.has(d.component)))) dependents.add(n);
    }
    if (dependents.size === 0) return;
    const startOrder = desired.startOrder.filter((n) => dependents.has(n));
    this.agentLog.info({ component: name, stop_order: [...startOrder].reverse(), start_order: startOrder, revision: this.deps.store.appliedRevision()?.id }, 'hard dependency restarted: restarting its hard dependents');
    await this.executeOrders(desired, [...startOrder].reverse(), startOrder);
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
      const order = this.deps.store.components().map((r) => r.name).reverse();
      const result: ExecutionResult = { started: [], stopped: [], failed: [] };
      await stopAll(order, new Set(), { store: this.deps.store, workers: this.workers, worker: (n) => this.worker(n), log: this.supLog, concurrency: this.deps.concurrency, revision: this.deps.store.appliedRevision()?.id ?? 'unknown' }, result);
      for (const name of order) if (this.deps.store.component(name)) this.deps.store.recordState(name, 'stopped', 'the agent stopped everything on exit');
    });
  }
}
