// What starting an agent takes (agent.ts): the composition root (run-agent.ts) fills it from the validated
// configuration; tests fill it directly.
import type { MaintenanceWindow } from '../core/maintenance-window.js';
import type { DeviceProblem, TrustSetting } from './agent-types.js';
import type { WaitSteps } from './device-waits.js';
import type { AgentUpdater } from '../agent-update/agent-updater.js';
import type { SecretSteps } from './revision-secrets.js';
import type { PublicKey } from '../trust/minisign.js';
import type { DesiredComponent, DesiredState } from '../core/desired-state.js';
import type { Labels } from '../core/labels.js';
import type { RestartLimits } from '../core/restart-policy.js';
import type { Logger } from '../log/logger.js';
import type { ProbeResult } from '../runtime/probe.js';
import type { ComponentPaths, Runtime } from '../runtime/runtime.js';
import type { RepoReader } from '../source/repo-reader.js';
import type { StateStore } from '../store/state-store.js';
import type { RolloutGate } from './rollout-gate.js';
import type { StateDirLock } from './state-dir-lock.js';

// Defined in agent-types.ts (a leaf, so the spine and the settings can name them without an import circle).
export type { DeviceProblem, TrustSetting } from './agent-types.js';

export interface AgentOptions {
  /** The plan to run (`--plan`); without it the plan comes from fleet.toml, by `fleet`'s name and labels (SPEC §13). */
  planFile?: string;
  /** This device as fleet.toml's targets see it; needed without `planFile`. */
  fleet?: { device: string; labels: Labels };
  /** The enrolment keys trusted here (`--enrollment-key`): the rollout gate counts reports that verify (SPEC §15). */
  enrollmentKeys?: readonly PublicKey[];
  /** How secrets are opened (SPEC §16): the device's opener and the vault its runtimes read values from. */
  secrets?: SecretSteps;
  /** How this agent updates itself to the version a revision's [agent] names (SPEC §17). */
  agentUpdate?: AgentUpdater;
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
  /** `--window`: when this device applies a new revision; a fleet target's window wins (SPEC §19). */
  window?: MaintenanceWindow;
  /** Downloads a revision's artifacts (and, for one held for its window, images) before anything stops (prefetch.ts). */
  prefetch?: WaitSteps['prefetch'];
  now?: () => number;
  random?: () => number;
}
