// Everything the composition root (run-agent.ts) needs, validated once by the caller (the CLI's agent-settings.ts:
// flags and the configuration file, with their messages): typed values, no strings left to parse here.
import type { MaintenanceWindow } from '../core/maintenance-window.js';
import type { DevicePolicy } from '../core/device-policy.js';
import type { Labels } from '../core/labels.js';
import type { RestartLimits } from '../core/restart-policy.js';
import type { DeviceKeys } from '../identity/device-keys.js';
import type { SocketPaths } from '../runtime/container-engine.js';
import { sameRepository } from '../git/git-repo-location.js';
import type { PublicKey } from '../trust/minisign.js';
import type { TrustSetting } from './agent-types.js';

export interface GitSettings {
  kind: 'git';
  /** A URL (http/https) or an absolute path. */
  repo: string;
  ref: string;
  pollMs: number;
  token?: string;
  allowHistoryRewrite: boolean;
  onFailure: 'none' | 'rollback';
  /** Where Git notes and rollout refs go, when not to `repo` (`--status-repo`). */
  statusRepo?: string;
  /**
   * The token for `statusRepo` (`--status-token-file`): reports are pushed, so it can write; `token` then needs only
   * to read the followed repository. Without it, `token` serves both.
   */
  statusToken?: string;
  /** `git-notes`, `github`; empty for `none`. */
  status: Array<'git-notes' | 'github'>;
  /** With `github` in `status`: where and how. */
  github?: { owner: string; repo: string; token: string; apiBase?: string };
}

/**
 * Where this device's reports go and with which credential (the one place that decides it): the reports repository
 * with its own token, else the followed repository with its token (which must then be able to push).
 */
export function reportsRemote(git: Omit<GitSettings, 'kind'>): { repo: string; token?: string; separate: boolean } {
  const token = git.statusRepo !== undefined ? (git.statusToken ?? git.token) : git.token;
  return {
    repo: git.statusRepo ?? git.repo,
    ...(token !== undefined && { token }),
    separate: git.statusRepo !== undefined && !sameRepository(git.statusRepo, git.repo),
  };
}

export interface DirectorySettings {
  kind: 'dir';
  /** Absolute. */
  root: string;
  settleMs: number;
}

/** `--certificate` is read whole: a certificate is a few hundred bytes (a larger file was named by mistake). */
export const MAX_CERTIFICATE_FILE_BYTES = 16 * 1024;

/** The device's identity (SPEC §15), as the agent runs with it. */
export interface IdentitySettings {
  /** The device's own keys (`<state-dir>/identity`), made at its first start. Their secret halves never leave the device. */
  keys: DeviceKeys;
  /** `--enrollment-key`: the operator keys a device certificate must be signed by; empty when none is given. */
  enrollmentKeys: Array<{ file: string; key: PublicKey }>;
  /** `--certificate`: this device's certificate given locally, unverified (else it is looked for in the repository's devices/). */
  certificate?: { file: string; text: string };
}

/** `--enrollment-key` and `--certificate`, read and checked with the other flags: what IdentitySettings has besides the keys. */
export type EnrollmentSettings = Omit<IdentitySettings, 'keys'>;

export interface RunSettings {
  source: GitSettings | DirectorySettings;
  /** A path inside the repository; absent when fleet.toml picks the plan. */
  planFile?: string;
  device: string;
  labels: Labels;
  /** Absolute. */
  stateDir: string;
  trust: TrustSetting;
  policy: DevicePolicy;
  /**
   * `--docker-socket` (or DOCKER_HOST's unix:// path) and `--podman-socket`: where each engine is looked for instead of
   * its default places (runtime/container-engine.ts); absent or empty, the defaults.
   */
  engineSockets?: SocketPaths;
  /**
   * `--allow-agent-update`: this agent installs the version a revision's [agent] names (SPEC §17). Root on the device
   * for whoever can sign the repository, so the device allows it, as it allows --allow-root.
   */
  allowAgentUpdate?: boolean;
  concurrency: number;
  graceMs: number;
  restartLimits: RestartLimits;
  logMaxBytes: number;
  logKeep: number;
  /** `--window`: when this device applies a new revision (SPEC §19); a fleet target's window wins. */
  window?: MaintenanceWindow;
  /**
   * Set by `keystone agent` once the state directory is locked and before anything in it is read (runAgent's
   * beforeAdopt hook: the keys live in the state directory, and a device whose keys are unsafe or gone must not start);
   * so undefined before that hook has run, and for callers that run an agent without keys.
   */
  identity?: IdentitySettings;
}
