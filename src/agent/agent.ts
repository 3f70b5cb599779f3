// One device's agent (SPEC §7), assembled: the store, the engine (the one writer of what runs), the outcomes (the one
// writer of what is said about a revision), the loop (revision-queue.ts) that takes each revision through the spine
// (take-revision.ts), the rollout holds and the operator's sync controls. Read take-revision.ts for what happens to a
// new commit, and outcomes.ts for what is recorded and reported about it.
import type { EventEmitter } from 'node:events';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_RESTART_LIMITS } from '../core/restart-policy.js';
import type { ComponentPaths } from '../runtime/runtime.js';
import { COMPONENTS_DIR, componentPaths as layoutPaths } from '../state-dir/layout.js';
import { safeDirectory } from '../state-dir/safe-path.js';
import type { Revision } from '../source/directory-source.js';
import type { DeviceHealth } from '../report/commit-status.js';
import type { StateStore } from '../store/state-store.js';
import { agentEvents, type AgentEventMap } from './agent-events.js';
import type { AgentOptions } from './agent-options.js';
import { deviceHealth } from './device-health.js';
import { Engine } from './engine.js';
import { rotateLogsEvery } from './log-rotation.js';
import { observedStore } from './observed-store.js';
import { Outcomes } from './outcomes.js';
import { RestartResume } from './restart-resume.js';
import { RevisionQueue } from './revision-queue.js';
import { RolloutHolds, type RolloutHold } from './rollout-holds.js';
import { openStateDir } from './state-dir.js';
import type { StateDirLock } from './state-dir-lock.js';
import { SyncControls, type ManualApplyAccepted, type SyncState } from './sync-controls.js';
import { takeRevision } from './take-revision.js';
import { applyCandidate } from './apply-candidate.js';
import { revisionStepsOf, type RevisionSteps } from './revision-steps.js';
import { openStore } from './open-store.js';
import { rolloutKeep, runtimeOfKind, waitingHold } from './agent-reads.js';
import { UpdateLockWait, type DeviceHold } from './update-lock-wait.js';
import { WindowWait } from './window-wait.js';

export type { AgentEventMap } from './agent-events.js';
export type { AgentOptions } from './agent-options.js';
export type { DeviceProblem, TrustSetting } from './agent-types.js';
export type { RolloutHold } from './rollout-holds.js';
export type { ManualApplyAccepted, SyncState } from './sync-controls.js';

export interface Agent {
  store: StateStore;
  engine: Engine;
  events: EventEmitter<AgentEventMap>;
  /** Where outcomes are written and reported: the Git source's reporters register here. */
  outcomes: Outcomes;
  /** Hands a revision to the loop; a burst collapses to the newest. */
  offer(r: Revision): void;
  /**
   * Asks the source to look for a new revision now (POST /v1/sync); what it finds goes through offer(). Returns false
   * when no source has registered a way to look. The look runs in the background; looks asked for meanwhile collapse.
   */
  sync(): boolean;
  /**
   * sync(), then resolves once that look (and any asked for during it) has ended and the loop is idle: what the look
   * found was applied, held at the rollout gate or refused (POST /v1/sync?wait=done). Undefined when no source can
   * look on demand; `lookFailed` when the last look threw.
   */
  syncSettled(): Promise<{ lookFailed?: string }> | undefined;
  /** The source registers how to look now (directory: re-read; Git: fetch). The last registration wins. */
  onSync(look: () => Promise<void>): void;
  /**
   * An operator's apply of a revision sent to the agent (`keystonectl apply`): verified and applied like any other.
   * An agent following Git refuses it (KS_FOLLOWING_GIT) unless `force`, which suspends the Git sync until resume().
   */
  applyManual(
    r: Revision & { origin: 'manual'; planFile: string },
    opts: { force: boolean; now?: boolean },
  ): ManualApplyAccepted;
  /** Ends a suspension: the newest revision the source found meanwhile is applied, or the source looks now. */
  resume(): { resumed: boolean; revision?: string };
  syncState(): SyncState;
  /** Commits held at the rollout gate, newest first, with why (SPEC §14). */
  rolloutHolds(): RolloutHold[];
  /** The revision waiting for update locks (SPEC §19), with why and since when; undefined when none waits. */
  waiting(): DeviceHold | undefined;
  /**
   * The revision waiting for its maintenance window goes now (`keystonectl sync --now`, an operator's word): the id
   * of the one taken up, or undefined when none waits for a window. Update locks still hold.
   */
  goNow(): string | undefined;
  /** The directory of a component's stdout.log and stderr.log (GET /v1/logs/{name}). */
  logDirOf(name: string): string;
  /** `text` without the secret values this agent holds (SPEC §16): for what leaves the device, such as a log tail. */
  scrubSecrets(text: string): string;
  /** The device's health now, as reports carry it (device-health.ts; GET /v1/revision's `agent.health`). */
  health(): DeviceHealth;
  /**
   * After a restart, from the local clone (`load`): the commit applied last is resumed at once (its adopted instances
   * health-checked, supervision back) rather than at the first look, then the commits held at the gate when the agent
   * last stopped are held again (SPEC §14). The agent keeps `load` to read back the commit it applied last when the
   * first revision after a restart is refused.
   */
  restoreHolds(load: (commit: string) => Promise<Revision | undefined>): Promise<void>;
  /** The commits whose rollout refs this device keeps: the one it runs, those it holds, and its recent failures. */
  rolloutKeep(): string[];
  /** Resolves when no revision is pending or being applied. */
  idle(): Promise<void>;
  close(opts?: { stopComponents?: boolean }): Promise<void>;
}

/** Where a component lives: `<state>/components/<name>/{work,logs}`. */
export function componentPaths(stateDir: string, name: string): ComponentPaths {
  return layoutPaths(stateDir, name);
}

/**
 * Checks the state directory and takes its lock (unless the caller holds it: `stateDirLock`), then opens the store
 * and adopts what runs. Throws StateDirError (KS_STATE_DIR_UNSAFE, KS_STATE_DIR_LOCKED) before anything is read or
 * adopted; the lock is released by close(), or at once when the start fails.
 */
export async function startAgent(opts: AgentOptions): Promise<Agent> {
  const lock = opts.stateDirLock ?? openStateDir(opts.stateDir);
  try {
    return await startLocked(opts, lock);
  } catch (e) {
    lock.release();
    throw e;
  }
}

async function startLocked(opts: AgentOptions, lock: StateDirLock): Promise<Agent> {
  const now = opts.now ?? Date.now;
  const random = opts.random ?? Math.random;
  const log = opts.log.child({ module: 'agent' });
  if (opts.planFile === undefined && !opts.fleet)
    throw new Error('startAgent: give planFile, or fleet (the device name and labels fleet.toml picks a plan by)');
  const following = opts.following ?? 'directory';
  safeDirectory(join(opts.stateDir, COMPONENTS_DIR), { mode: 0o711 });
  const { events, emit } = agentEvents(log);
  // Outcomes look for a recovery whenever a component is recorded healthy; they exist once the engine does.
  const late: { outcomes?: Outcomes } = {};
  const scrub = (text: string) => opts.secrets?.vault.scrub(text) ?? text;
  const store = observedStore(openStore(opts, now), emit, () => late.outcomes?.checkRecovery(), scrub);
  // Run users must reach their own work directory inside the state directory: traverse, not list.
  chmodSync(opts.stateDir, 0o711);
  chmodSync(join(opts.stateDir, COMPONENTS_DIR), 0o711);

  const runtime = runtimeOfKind(opts.runtimes);
  const engine = new Engine({
    store,
    runtime,
    paths: (name) => componentPaths(opts.stateDir, name),
    probe: async (c, paths, timeoutMs, signal) => {
      const r = await opts.probe(c, paths, timeoutMs, signal);
      emit('probe', { component: c.name, ok: r.ok, latencyMs: r.latencyMs });
      return r;
    },
    log: opts.log,
    now,
    random,
    graceMs: opts.graceMs,
    restartLimits: opts.restartLimits ?? DEFAULT_RESTART_LIMITS,
    concurrency: opts.concurrency,
  });
  const out = (late.outcomes = new Outcomes({
    store,
    emit,
    log: opts.log,
    now,
    healthy: () => engine.healthy(),
    scrub,
  }));
  await engine.adoptAll((kind) => opts.runtimes[kind], opts.ownerTag);
  const stopRotation = rotateLogsEvery({
    store,
    logDirOf: (n) => componentPaths(opts.stateDir, n).logDir,
    maxBytes: opts.logMaxBytes ?? 10 * 1024 * 1024,
    keep: opts.logKeep ?? 5,
    everyMs: opts.logCheckMs ?? 30_000,
    log,
  });

  const queue: RevisionQueue = new RevisionQueue({
    // A lock a watcher kept for this retake and nothing took over goes when the take ends, whatever became of it.
    take: (rev) => takeRevision(rev, steps).finally(() => lockWait.releaseKept()),
    recheck: () => holds.recheck(),
    hasHolds: () => holds.size > 0,
    afterRefusal: (refused) => resume.reloadApplied(refused),
    emit,
    log,
    retryMs: opts.retryMs ?? 60_000,
  });
  /** What a restart takes up again from the local clone, and the reload after a first refusal (restart-resume.ts). */
  const resume = new RestartResume({
    store,
    engine,
    queue,
    log,
    ...(opts.agentUpdate && { agentUpdate: opts.agentUpdate }),
  });
  const controls = new SyncControls({ following, store, queue, log, now });
  /** The revision waiting for its maintenance window (SPEC §19): taken up again when it opens. */
  const windowWait = new WindowWait({
    now,
    log,
    retake: (rev) => {
      if (!queue.pending) queue.enqueue(rev);
    },
  });
  /** The revision waiting for update locks (SPEC §19): taken up again the moment a lock is let go. */
  const lockWait = new UpdateLockWait({
    now,
    log,
    // Unless something newer came meanwhile: it goes first, and replaces this one.
    retake: (rev) => {
      if (!queue.pending) queue.enqueue(rev);
      else void lockWait.releaseKept();
    },
  });
  /** Commits held at the rollout gate (SPEC §14). */
  const holds = new RolloutHolds({
    ...(opts.rolloutGate && { gate: opts.rolloutGate(store) }),
    ...(opts.rolloutUnavailable !== undefined && { unavailable: opts.rolloutUnavailable }),
    recheckMs: opts.gateRecheckMs ?? 60_000,
    random,
    now,
    log,
    onHeld: (e) => out.held(e),
    apply: async (c) => {
      // Deferred (another agent version while this one is on probation), or refused for a reason that passes (a full
      // disk): offered again later and at the next look, not lost with the hold it left.
      const o = await applyCandidate(c, steps);
      if (o.kind === 'deferred' || (o.kind === 'rejected' && o.passing)) queue.later(c.rev);
    },
    wantRecheck: () => queue.requestRecheck(),
    // A forced manual apply holds the Git sync: no held commit may replace it before `keystonectl resume`.
    paused: () => controls.paused(),
    persist: (revisions) => store.setHeldCommits(revisions),
  });
  const steps: RevisionSteps = revisionStepsOf(opts, {
    following,
    store,
    engine,
    outcomes: out,
    holds,
    log,
    now,
    lockWait,
    windowWait,
  });

  const agent: Agent = {
    store,
    engine,
    events,
    outcomes: out,
    offer: (r) => controls.offer(r),
    applyManual: (r, o) => controls.applyManual(r, o),
    resume: () => controls.resume(),
    syncState: () => controls.state(),
    sync: () => controls.sync(),
    syncSettled: () => controls.syncSettled(),
    onSync: (fn) => controls.onSync(fn),
    rolloutHolds: () => holds.holds(),
    goNow: () => {
      // Something newer in line goes first, and replaces it: nothing to send through then.
      if (queue.pending) return undefined;
      const rev = windowWait.takeNow();
      if (rev) queue.enqueue({ ...rev, overrideWindow: true });
      return rev?.id;
    },
    waiting: () => waitingHold(lockWait, windowWait),
    logDirOf: (name) => componentPaths(opts.stateDir, name).logDir,
    scrubSecrets: scrub,
    health: () => deviceHealth({ stateDir: opts.stateDir }),
    restoreHolds: (load) => resume.restoreHolds(load),
    rolloutKeep: () => rolloutKeep(store, holds.ids()),
    idle: () => queue.idle(),
    async close(closeOpts = {}) {
      stopRotation();
      holds.close();
      lockWait.cancel();
      windowWait.cancel();
      // Revisions not yet begun are dropped, and the one being applied ends now: a stop must not wait out start budgets.
      queue.close();
      engine.interrupt();
      await queue.idle();
      if (closeOpts.stopComponents) await engine.stopAll();
      else await engine.detach();
      store.close();
      lock.release();
    },
  };
  return agent;
}
