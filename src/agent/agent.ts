// The spine of SPEC §7 for one device: source → verify → load → diff → apply → record, newest revision first.
import { EventEmitter } from 'node:events';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { formatDiagnostic } from '../core/errors.js';
import { DEFAULT_RESTART_LIMITS, type RestartLimits } from '../core/restart-policy.js';
import type { Logger } from '../log/logger.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ProbeResult } from '../runtime/probe.js';
import type { DesiredComponent, DesiredState } from '../core/desired-state.js';
import type { ComponentPaths, InstanceRef } from '../runtime/runtime.js';
import { rotateComponentLogs } from '../runtime/log-files.js';
import { loadDeviceRevision } from '../source/load-fleet.js';
import { deviceIdentity } from './device-identity.js';
import type { Labels } from '../core/labels.js';
import { FLEET_FILE } from '../core/fleet.js';
import type { Revision } from '../source/directory-source.js';
import { openStateStore, type ComponentState, type StateStore, type SyncSuspension } from '../store/state-store.js';
import type { Keyring } from '../trust/keyring.js';
import { TrustError } from '../trust/trust-error.js';
import { VerifiedReader, verifyRevision } from '../trust/verify-revision.js';
import { Engine, type ApplyResult } from './engine.js';
import { openStateDir } from './state-dir.js';
import type { StateDirLock } from './state-dir-lock.js';
import { safeDirectory } from '../runtime/safe-path.js';
import type { Reconcile } from '../core/diff.js';
import type { RepoReader } from '../source/repo-reader.js';
import { stateDigest, type RolloutGate } from './rollout-gate.js';
import { RolloutHolds, type Candidate, type RolloutHold } from './rollout-holds.js';
import { isCommitId } from './commit-reporting.js';

export type { RolloutHold } from './rollout-holds.js';

/** Refusals that depend on the device's clock (docs/signing.md, "Time"): the same revision is looked at again later. */
const CLOCK_REFUSALS: ReadonlySet<string> = new Set(['KS_SIGNATURE_FROM_FUTURE', 'KS_SIGNATURE_TOO_OLD']);

export type TrustSetting = { unsigned: true } | { unsigned: false; keyring: Keyring; maxAgeSeconds?: number; maxClockSkewSeconds?: number };

/** A component this device cannot run as its recipe asks. */
export interface DeviceProblem {
  component: string;
  /** The recipe file. */
  file: string;
  /** TOML path, e.g. `lifecycle.run.container.mounts[0].source`. */
  path: string;
  code: string;
  message: string;
}

export interface AgentOptions {
  /** The plan to run (`--plan`); without it the plan comes from fleet.toml, by `fleet`'s name and labels (SPEC §13). */
  planFile?: string;
  /** This device as fleet.toml's targets see it; needed without `planFile`. */
  fleet?: { device: string; labels: Labels };
  stateDir: string;
  trust: TrustSetting;
  log: Logger;
  runtimes: Partial<Record<'process' | 'container', Runtime>>;
  probe: (c: DesiredComponent, paths: ComponentPaths, timeoutMs: number, signal: AbortSignal) => Promise<ProbeResult>;
  concurrency: number;
  graceMs: number;
  restartLimits?: RestartLimits;
  /** Component logs are rotated past this size (copy-then-truncate), keeping `logKeep` old files. */
  logMaxBytes?: number;
  logKeep?: number;
  /** How often log sizes are checked. */
  logCheckMs?: number;
  /** The state directory's lock, when the caller took it already (openStateDir); it is released by close(). */
  stateDirLock?: StateDirLock;
  /** The mark the process runtime puts on components (see orphan-sweep.ts); enables the orphan sweep. */
  ownerTag?: string;
  /**
   * What the agent follows: a Git ref (its commits are the desired state, so a manual apply needs --force and then
   * suspends the sync) or a development directory (a manual apply is taken; the next change of the directory wins).
   */
  following?: 'git' | 'directory';
  /**
   * Checks only the device can make (container permissions, mount sources on this host): a revision that fails one
   * is refused before anything is stopped or started, like an invalid one.
   */
  check?: (state: DesiredState) => DeviceProblem[] | Promise<DeviceProblem[]>;
  /**
   * Staged rollouts (SPEC §14): reads the fleet's rollout refs. Without it a commit whose fleet.toml has [rollout] is
   * held (`rolloutUnavailable` says why): a device that cannot see the fleet's reports cannot tell when its turn is.
   */
  rolloutGate?: (store: StateStore) => RolloutGate;
  rolloutUnavailable?: string;
  /** How often commits held at the gate are looked at again; default 60 s (the poll interval, for a Git source). */
  gateRecheckMs?: number;
  /**
   * A revision whose handling failed unexpectedly (the state store could not write: a full disk), or that this device's
   * clock refused (a signature from its future, or older than --max-age), is tried again at the next look
   * (POST /v1/sync) or after this long, doubling up to 16 times it; default 60 s.
   */
  retryMs?: number;
  /** Called with the revision's own reader just before it is applied: relative artifacts are read from it. */
  useReader?: (reader: RepoReader) => void;
  now?: () => number;
  random?: () => number;
}

/**
 * What the agent observes as it happens, for metrics and for API calls that wait. Emitted synchronously from inside
 * the writer, so listeners must be cheap; one that throws is logged and does not disturb the agent.
 */
export interface AgentEventMap {
  /** A state recorded for a component (the store's record is already written). */
  state: [{ component: string; state: ComponentState; reason?: string }];
  /** A new instance was spawned and recorded (state `starting`). */
  started: [{ component: string; instance: InstanceRef }];
  /** The supervisor counted a restart after an exit; `restarts` is the component's current count. */
  restart: [{ component: string; restarts: number }];
  /** One health probe, from the readiness wait or the monitor. */
  probe: [{ component: string; ok: boolean; latencyMs: number }];
  /** A revision went through the loop: applied (success or failure) or refused before it was applied. */
  revision: [
    {
      revision: string;
      outcome: 'success' | 'failure' | 'rejected';
      durationMs: number;
      summary: string;
      /** What failed (outcome failure). */
      failed?: Array<{ name: string; reason: string }>;
      /** The reconcile that was carried out (success and failure). */
      reconcile?: Reconcile;
      /** The fleet.toml target the plan came from. */
      target?: string;
      /** The device's rollout wave for this commit (SPEC §14). */
      wave?: string;
    },
  ];
  /** A revision passed verification and validation: what applying it stops and starts. */
  applying: [{ revision: string; reconcile: Reconcile; target?: string; wave?: string }];
  /**
   * A commit verified and valid for this device but held at its rollout's gate (SPEC §14), or halted there for good.
   * Emitted when the reason's kind changes (another wave waited for, halted), not on every look.
   */
  held: [{ revision: string; target?: string; wave: string; reason: string; halted: boolean }];
  /** A revision waiting to be applied was replaced by a newer one before its turn. */
  superseded: [{ revision: string; by: string }];
  /** An image pull for a container component, at most once a second while bytes flow (emitted by the runtime's owner). */
  pull: [{ component: string; image: string; status: string; currentBytes: number; totalBytes: number }];
}

/** What a manual apply was told at once; its progress follows as events. */
export interface ManualApplyAccepted {
  revision: string;
  planFile: string;
  /** True when this apply suspended the Git sync (--force on an agent that follows Git). */
  suspendedSync: boolean;
}

export interface SyncState {
  following: 'git' | 'directory';
  /** Present while a forced manual apply holds the Git sync. */
  suspended?: SyncSuspension;
  /** A revision the source found while suspended, applied on resume. */
  held?: string;
}

export interface Agent {
  store: StateStore;
  engine: Engine;
  events: EventEmitter<AgentEventMap>;
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
  applyManual(r: Revision & { planFile: string }, opts: { force: boolean }): ManualApplyAccepted;
  /** Ends a suspension: the newest revision the source found meanwhile is applied, or the source looks now. */
  resume(): { resumed: boolean; revision?: string };
  syncState(): SyncState;
  /** Commits held at the rollout gate, newest first, with why (SPEC §14). */
  rolloutHolds(): RolloutHold[];
  /** The directory of a component's stdout.log and stderr.log (GET /v1/logs/{name}). */
  logDirOf(name: string): string;
  /**
   * Holds again the commits held at the gate when the agent last stopped (SPEC §14: the newest commit whose gate is
   * open is applied, not only the tip the source offers after a restart); `load` reads one from the local clone. The
   * agent keeps `load` to read back the commit it applied last when the first revision after a restart is refused.
   */
  restoreHolds(load: (commit: string) => Promise<Revision | undefined>): Promise<void>;
  /** The commits whose rollout refs this device keeps: the one it runs and those it holds. */
  rolloutKeep(): string[];
  /** Resolves when no revision is pending or being applied. */
  idle(): Promise<void>;
  lastResult?: ApplyResult;
  close(opts?: { stopComponents?: boolean }): Promise<void>;
}

/** Where a component lives: `<state>/components/<name>/{work,logs}`. */
export function componentPaths(stateDir: string, name: string): ComponentPaths {
  return { workDir: join(stateDir, 'components', name, 'work'), logDir: join(stateDir, 'components', name, 'logs') };
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
  const log = opts.log.child({ module: 'agent' });
  if (opts.planFile === undefined && !opts.fleet) throw new Error('startAgent: give planFile, or fleet (the device name and labels fleet.toml picks a plan by)');
  // Without a fleet identity every revision names its plan (planFile, or a manual apply's).
  const fleet = opts.fleet ?? { device: '', labels: {} };
  const identity = deviceIdentity(opts.fleet, opts.planFile);
  safeDirectory(join(opts.stateDir, 'components'), { mode: 0o711 });
  const events = new EventEmitter<AgentEventMap>();
  const emit = <K extends keyof AgentEventMap>(name: K, ...args: AgentEventMap[K]) => {
    try {
      (events.emit as (event: string, ...a: unknown[]) => boolean).call(events, name, ...args);
    } catch (e) {
      log.error({ err: e as Error, event: name }, 'an agent event listener failed');
    }
  };
  const store = observedStore(openStateStore(opts.stateDir, { now }), emit);
  // Run users must reach their own work directory inside the state directory: traverse, not list.
  chmodSync(opts.stateDir, 0o711);
  chmodSync(join(opts.stateDir, 'components'), 0o711);

  const interrupted = store.unfinishedApply();
  if (interrupted) {
    store.finishApply(interrupted.id, { finishedAt: now(), outcome: 'failure', summary: 'interrupted: the agent stopped during this apply' });
    log.warn({ revision: interrupted.revision }, 'the previous apply was interrupted; reconciling again');
  }

  const runtime = (kind: 'process' | 'container'): Runtime => {
    const r = opts.runtimes[kind];
    if (!r) throw Object.assign(new Error(`no ${kind} runtime on this device`), { code: 'KS_RUNTIME_UNAVAILABLE' });
    return r;
  };
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
    random: opts.random ?? Math.random,
    graceMs: opts.graceMs,
    restartLimits: opts.restartLimits ?? DEFAULT_RESTART_LIMITS,
    concurrency: opts.concurrency,
  });
  await engine.adoptAll((kind) => opts.runtimes[kind], opts.ownerTag);

  // Size-based log rotation: the children write to their files directly (they outlive the agent), so the agent rotates.
  const logTimer = setInterval(() => {
    void (async () => {
      for (const rec of store.components()) {
        const noSpace = (path: string, err: Error) => log.warn({ component: rec.name, path, err: err.message, code: 'KS_LOG_NO_SPACE' }, 'the file system is full: log truncated without keeping a copy');
        const rotated = await rotateComponentLogs(componentPaths(opts.stateDir, rec.name).logDir, opts.logMaxBytes ?? 10 * 1024 * 1024, opts.logKeep ?? 5, noSpace).catch(() => []);
        for (const path of rotated) log.info({ component: rec.name, path, revision: rec.revision }, 'rotated log');
      }
    })();
  }, opts.logCheckMs ?? 30_000);
  logTimer.unref();

  const following = opts.following ?? 'directory';
  const suspendedAtStart = store.syncSuspension();
  if (suspendedAtStart)
    log.warn({ revision: suspendedAtStart.revision, since: new Date(suspendedAtStart.since).toISOString() }, 'the Git sync is suspended by a manual apply: run `keystonectl resume` to follow Git again');
  let pending: Revision | undefined;
  /** The newest revision the source offered while the sync was suspended. */
  let held: Revision | undefined;
  let running: Promise<void> | undefined;
  let recheckWanted = false;
  let lastPlacement = '';
  /**
   * How to read a commit back from the local clone (the Git source hands it over in restoreHolds); undefined for a
   * directory, whose earlier content is gone.
   */
  let loadCommit: ((commit: string) => Promise<Revision | undefined>) | undefined;
  let reloadedApplied = false;
  /**
   * After a restart the engine has no revision loaded until one is applied: an adopted component that exits cannot be
   * restarted, and an apply a kill cut short stays half done. When the first revision offered is refused, nothing
   * else would be applied until the next valid commit, however long that takes: the commit applied last is read back
   * from the clone and applied again instead (once per run), as it would have been had it still been the tip.
   */
  const reloadApplied = (refused: string) => {
    const applied = store.appliedRevision()?.id;
    if (reloadedApplied || engine.desired || !loadCommit || applied === undefined || !isCommitId(applied) || applied === refused) return;
    reloadedApplied = true;
    void loadCommit(applied).then(
      (r) => {
        if (!r) return log.warn({ revision: applied, refused }, 'the revision applied last is no longer in the local clone: what was adopted runs on as it is until a valid revision comes');
        if (pending || engine.desired) return;
        log.info({ revision: applied, refused }, 'applying again the revision applied last: nothing valid is loaded since the restart');
        enqueue(r);
      },
      (e: Error) => log.error({ revision: applied, err: e }, 'cannot read back the revision applied last'),
    );
  };
  const kick = () => {
    if (!running) running = drain().finally(() => (running = undefined));
  };
  // The source offers each content once: a revision that failed for a passing reason (a full disk) would otherwise
  // never be applied, however long the device keeps running the previous one.
  let unfinished: Revision | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retries = 0;
  const retryUnfinished = () => {
    clearTimeout(retryTimer);
    const r = unfinished;
    unfinished = undefined;
    if (r && !pending) {
      log.info({ revision: r.id, attempt: retries + 1 }, 'trying again a revision that could not be applied');
      enqueue(r);
    }
  };
  const retryLater = (r: Revision) => {
    unfinished = r;
    const delayMs = (opts.retryMs ?? 60_000) * 2 ** Math.min(retries++, 4);
    clearTimeout(retryTimer);
    retryTimer = setTimeout(retryUnfinished, delayMs);
    retryTimer.unref();
    log.warn({ revision: r.id, retry_in_ms: delayMs }, 'still running the previous revision; this one is tried again at the next look (keystonectl sync) or after the delay');
  };
  const enqueue = (r: Revision) => {
    if (pending) {
      log.info({ revision: pending.id, newer: r.id }, 'superseded before it was applied');
      emit('superseded', { revision: pending.id, by: r.id });
    }
    pending = r;
    kick();
  };
  const requestRecheck = () => {
    if (!holds.size) return;
    recheckWanted = true;
    kick();
  };
  /** Commits held at the rollout gate (SPEC §14). */
  const holds = new RolloutHolds({
    ...(opts.rolloutGate && { gate: opts.rolloutGate(store) }),
    ...(opts.rolloutUnavailable !== undefined && { unavailable: opts.rolloutUnavailable }),
    recheckMs: opts.gateRecheckMs ?? 60_000,
    random: opts.random ?? Math.random,
    now,
    log,
    onHeld: (e) => emit('held', e),
    apply: (c) => applyResolved(c),
    wantRecheck: requestRecheck,
    // A forced manual apply holds the Git sync: no held commit may replace it before `keystonectl resume`.
    paused: () => (following === 'git' && store.syncSuspension() ? 'the Git sync is suspended by a manual apply (`keystonectl resume` follows Git again)' : undefined),
    persist: (revisions) => store.setHeldCommits(revisions),
  });
  let look: (() => Promise<void>) | undefined;
  let looking: Promise<void> | undefined;
  let lookAgain = false;
  /** Why the last look failed; cleared by a look that succeeds. */
  let lookFailed: string | undefined;
  const agent: Agent = {
    store,
    engine,
    events,
    offer(r) {
      // What the source found since replaces the revision waiting to be tried again (not a read-back of the applied one).
      unfinished = undefined;
      // Only a Git sync is suspended: a development directory (say, after switching from --repo) is always followed.
      const suspension = following === 'git' ? store.syncSuspension() : undefined;
      if (suspension) {
        if (held?.id !== r.id) log.info({ revision: r.id, suspended_by: suspension.revision }, 'the Git sync is suspended: holding this revision until `keystonectl resume`');
        held = r;
        return;
      }
      enqueue(r);
    },
    applyManual(r, applyOpts) {
      unfinished = undefined;
      let suspendedSync = false;
      if (following === 'git') {
        if (!applyOpts.force)
          throw Object.assign(
            new Error('this agent follows Git: push a commit to deploy instead (a manual apply would be undone by the next commit); --force applies it anyway and suspends the Git sync until `keystonectl resume`'),
            { code: 'KS_FOLLOWING_GIT' },
          );
        if (!store.syncSuspension()) {
          store.setSyncSuspension({ since: now(), revision: r.id, reason: 'a forced manual apply' });
          suspendedSync = true;
          log.warn({ revision: r.id }, 'the Git sync is suspended by a forced manual apply until `keystonectl resume`');
        }
      }
      log.info({ revision: r.id, plan: r.planFile, source: r.source }, 'manual apply requested');
      enqueue(r);
      return { revision: r.id, planFile: r.planFile, suspendedSync };
    },
    resume() {
      const was = store.syncSuspension();
      if (!was) return { resumed: false };
      store.setSyncSuspension(undefined);
      const found = held;
      held = undefined;
      log.info({ suspended_by: was.revision, ...(found && { revision: found.id }) }, 'the Git sync resumed');
      if (found) {
        enqueue(found);
        return { resumed: true, revision: found.id };
      }
      agent.sync();
      return { resumed: true };
    },
    syncState() {
      const suspended = store.syncSuspension();
      return { following, ...(suspended && { suspended }), ...(held && { held: held.id }) };
    },
    rolloutHolds() {
      return holds.holds();
    },
    logDirOf(name) {
      return componentPaths(opts.stateDir, name).logDir;
    },
    async restoreHolds(load) {
      loadCommit = load;
      // Oldest first: each is verified, resolved and held again as when it came; the newest ends first in line.
      for (const id of store.heldCommits().reverse()) {
        const rev = await load(id).catch(() => undefined);
        if (!rev) {
          log.warn({ revision: id }, 'a commit held before the restart is no longer in the local clone: not held again');
          continue;
        }
        enqueue(rev);
        await agent.idle();
      }
    },
    rolloutKeep() {
      const applied = store.appliedRevision()?.id;
      return [...new Set([...(applied !== undefined && isCommitId(applied) ? [applied] : []), ...holds.ids()])];
    },
    sync() {
      // A held commit is looked at again too: someone asked (a webhook, `POST /v1/sync`).
      requestRecheck();
      if (!look) return false;
      // One look at a time; asks during a look make one more after it (it may have started before the change).
      if (looking) lookAgain = true;
      else looking = looks().finally(() => (looking = undefined));
      return true;
    },
    syncSettled() {
      if (!agent.sync()) return undefined;
      return (async () => {
        // `looking` covers the look asked for just now (a look already under way is followed by one more).
        while (looking) await looking;
        await agent.idle();
        return lookFailed === undefined ? {} : { lookFailed };
      })();
    },
    onSync(fn) {
      look = fn;
    },
    async idle() {
      while (running) await running;
    },
    async close(closeOpts = {}) {
      clearInterval(logTimer);
      clearTimeout(retryTimer);
      unfinished = undefined;
      holds.close();
      // Revisions not yet begun are dropped, and the one being applied ends now: a stop must not wait out start budgets.
      if (pending) log.info({ revision: pending.id }, 'not applied: the agent is stopping');
      pending = undefined;
      engine.interrupt();
      await agent.idle();
      if (closeOpts.stopComponents) await engine.stopAll();
      else await engine.detach();
      store.close();
      lock.release();
    },
  };

  async function looks(): Promise<void> {
    do {
      lookAgain = false;
      try {
        await look?.();
        lookFailed = undefined;
      } catch (e) {
        lookFailed = (e as Error).message;
        log.error({ err: e as Error }, 'looking for a new revision failed');
      }
    } while (lookAgain);
    // Nothing newer found: someone asked (keystonectl sync, after freeing space), so the failed one goes again now.
    if (unfinished) retryUnfinished();
  }

  async function drain(): Promise<void> {
    while (pending || recheckWanted) {
      if (!pending) {
        recheckWanted = false;
        try {
          await holds.recheck();
        } catch (e) {
          log.error({ err: e as Error }, 'the rollout gate failed unexpectedly');
        }
        continue;
      }
      const rev = pending;
      pending = undefined;
      try {
        await handle(rev);
        if (unfinished !== rev) retries = 0;
      } catch (e) {
        log.error({ revision: rev.id, err: e as Error }, 'revision failed unexpectedly');
        if (!pending) retryLater(rev);
      }
    }
  }

  async function applyResolved(c: Omit<Candidate, 'rollout' | 'wave' | 'waveName' | 'reason' | 'checkedAt'> & { waveName?: string }): Promise<void> {
    const { rev, state, planFile, target, signedAt, signers, waveName } = c;
    // Artifacts are pinned by digest, not listed in SHA256SUMS: they come from the revision's own (unverified) reader.
    opts.useReader?.(rev.reader);
    agent.lastResult = await engine.apply(
      state,
      { id: rev.id, source: rev.source, planFile, ...(target !== undefined && { target }), identity, unsigned: opts.trust.unsigned, ...(signedAt !== undefined && { signedAt }), ...(signers !== undefined && { signers }), ...(waveName !== undefined && { wave: waveName }) },
      { onReconcile: (reconcile) => emit('applying', { revision: rev.id, reconcile, ...(target !== undefined && { target }), ...(waveName !== undefined && { wave: waveName }) }) },
    );
    const r = agent.lastResult;
    // What ran well here: a later commit that brings it back is a revert to a known-good state (SPEC §14).
    if (r.outcome === 'success') store.recordGoodState(stateDigest(state), rev.id, now());
    emit('revision', { revision: rev.id, outcome: r.outcome, durationMs: now() - c.began, summary: r.summary, failed: r.execution.failed, reconcile: r.reconcile, ...(target !== undefined && { target }), ...(waveName !== undefined && { wave: waveName }) });
  }

  async function handle(rev: Revision): Promise<void> {
    log.info({ revision: rev.id, source: rev.source }, 'new revision');
    const began = now();
    let reader = rev.reader;
    let signedAt: number | undefined;
    let signers: string[] | undefined;
    // A manual apply names its plan; else --plan; else fleet.toml picks one by this device's name and labels.
    const explicitPlan = rev.planFile ?? opts.planFile;
    let planFile = explicitPlan ?? FLEET_FILE;
    let target: string | undefined;
    /** The device's rollout wave, once the plan is resolved: a refusal on the device then counts towards a halt. */
    let waveName: string | undefined;
    const reject = (reason: string) => {
      store.recordRejected({ revision: rev.id, planFile, ...(target !== undefined && { target }), at: now(), reason });
      log.error({ revision: rev.id, reason }, 'revision refused; still running the previous one');
      emit('revision', { revision: rev.id, outcome: 'rejected', durationMs: now() - began, summary: reason, ...(target !== undefined && { target }), ...(waveName !== undefined && { wave: waveName }) });
      reloadApplied(rev.id);
    };
    if (opts.trust.unsigned) {
      log.warn({ revision: rev.id }, 'UNSIGNED revision: signatures are not checked (--allow-unsigned, development only)');
    } else {
      // What this device already runs passed --max-age when it was applied. Offered again (the agent restarted, its
      // clock now a year ahead, or the state frozen) it is loaded again rather than refused, so that what runs stays
      // supervised; it is said loudly. A newer revision still has to pass.
      const runs = rev.id === store.appliedRevision()?.id;
      try {
        const v = await verifyRevision(rev.reader, {
          keyring: opts.trust.keyring,
          now: Math.floor(now() / 1000),
          // A rollback re-applies a revision this device already applied and saw succeed: the floor it raised since
          // is its own doing, not a replay by someone else.
          ...(store.lastSignedAt() !== undefined && !rev.rollback && { notBefore: store.lastSignedAt()! }),
          ...(opts.trust.maxAgeSeconds !== undefined && !runs && { maxAgeSeconds: opts.trust.maxAgeSeconds }),
          ...(opts.trust.maxClockSkewSeconds !== undefined && { maxClockSkewSeconds: opts.trust.maxClockSkewSeconds }),
        });
        reader = new VerifiedReader(rev.reader, v);
        signedAt = v.signedAt;
        signers = [...v.signers];
        log.info({ revision: rev.id, signers: v.signers, signed_at: new Date(v.signedAt * 1000).toISOString() }, 'signature verified');
        if (runs && opts.trust.maxAgeSeconds !== undefined && Math.floor(now() / 1000) - v.signedAt > opts.trust.maxAgeSeconds)
          log.warn({ revision: rev.id, code: 'KS_SIGNATURE_TOO_OLD', signed_at: new Date(v.signedAt * 1000).toISOString() }, 'the revision this device runs is older than --max-age: it keeps running, supervised; only a newer signed revision replaces it (or check the clock)');
      } catch (e) {
        if (!(e instanceof TrustError)) throw e;
        reject(`${e.code}: ${e.message}`);
        // Refused by this device's clock rather than by the signature: once the clock is right (NTP, date -s) it may pass.
        if (CLOCK_REFUSALS.has(e.code) && !pending) retryLater(rev);
        return;
      }
    }
    let resolution;
    try {
      resolution = await loadDeviceRevision(reader, { ...(explicitPlan !== undefined && { plan: explicitPlan }), ...fleet });
      if (resolution.ok) {
        ({ planFile, target } = resolution);
        // Only a staged commit followed from Git has a wave: its refusal here is this device's `error` in the rollout.
        if (resolution.rollout && isCommitId(rev.id) && !rev.rollback && following === 'git') waveName = resolution.wave?.name;
        if (target !== undefined) {
          const placement = `device=${fleet.device} target=${target}${resolution.wave ? ` wave=${resolution.wave.name}` : ''}`;
          // Once per agent and whenever it changes: where this device stands in the fleet (SPEC §13–14).
          if (placement !== lastPlacement) log.info({ device: fleet.device, target, ...(resolution.wave && { wave: resolution.wave.name }) }, 'this device in the fleet');
          lastPlacement = placement;
          log.info({ revision: rev.id, device: fleet.device, target, ...(resolution.wave && { wave: resolution.wave.name }), plan: planFile }, 'fleet target');
        }
      } else if (resolution.noTarget) {
        // A valid revision with no place for this device: it keeps what runs, and says so with its labels.
        const d = resolution.diagnostics[0]!;
        log.error({ revision: rev.id, code: d.code, device: fleet.device, labels: fleet.labels }, formatDiagnostic(d));
        return reject(`${d.message} [${d.code}]`);
      }
    } catch (e) {
      if (e instanceof TrustError) return reject(`${e.code}: ${e.message}`);
      throw e;
    }
    if (!resolution.ok) {
      for (const d of resolution.diagnostics) log.error({ revision: rev.id, code: d.code }, formatDiagnostic(d));
      return reject(`invalid: ${resolution.diagnostics.length} error(s), first: ${formatDiagnostic(resolution.diagnostics[0]!)}`);
    }
    const problems = (await opts.check?.(resolution.state)) ?? [];
    if (problems.length) {
      for (const p of problems) log.error({ revision: rev.id, component: p.component, code: p.code }, `${p.file}: ${p.path}: ${p.message}`);
      const first = problems[0]!;
      return reject(`refused on this device: ${problems.length} problem(s), first: ${first.file}: ${first.path}: ${first.message} [${first.code}]`);
    }
    // The commit this device already runs (offered again after a restart) is not gated again: its own report
    // stands (a failed canary must stay a failure in the rollout, not turn into `halted` by its own failure).
    const current = rev.id === store.appliedRevision()?.id;
    if (resolution.rollout && resolution.wave && waveName !== undefined && !current) {
      // Staged (SPEC §14): held until its gate opens. A newer commit goes first in line; the same one offered again
      // (a restart, a rollback target become the tip) replaces its entry.
      const c: Candidate = { rev, state: resolution.state, planFile, ...(target !== undefined && { target }), ...(signedAt !== undefined && { signedAt }), ...(signers !== undefined && { signers }), began, rollout: resolution.rollout, wave: resolution.wave.index, waveName: resolution.wave.name };
      await holds.hold(c);
      return;
    }
    // A newer commit applied without the gate: what is held is behind it (a rollback is older, and keeps them).
    if (isCommitId(rev.id) && !rev.rollback && !current) holds.drop();
    await applyResolved({ rev, state: resolution.state, planFile, ...(target !== undefined && { target }), ...(signedAt !== undefined && { signedAt }), ...(signers !== undefined && { signers }), began, ...(waveName !== undefined && { waveName }) });
  }

  return agent;
}

/** The store with its supervision writes reported as events: the writer stays unaware of who watches. */
function observedStore(store: StateStore, emit: <K extends keyof AgentEventMap>(name: K, ...args: AgentEventMap[K]) => void): StateStore {
  const hooks: Partial<StateStore> = {
    recordState(name, state, reason) {
      store.recordState(name, state, reason);
      emit('state', { component: name, state, ...(reason !== undefined && { reason }) });
    },
    recordStart(name, instance, startedAt) {
      store.recordStart(name, instance, startedAt);
      emit('started', { component: name, instance });
      emit('state', { component: name, state: 'starting' });
    },
    recordRestart(name) {
      const restarts = store.recordRestart(name);
      emit('restart', { component: name, restarts });
      return restarts;
    },
  };
  // Everything else goes to the store itself, bound to it (its methods use private fields through `this`).
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, key) {
      if (Object.hasOwn(hooks, key)) return hooks[key as keyof StateStore];
      const v: unknown = Reflect.get(target, key, target);
      if (typeof v !== 'function') return v;
      if (!bound.has(key)) bound.set(key, (v as (...a: unknown[]) => unknown).bind(target));
      return bound.get(key);
    },
  });
}
