// What `keystone doctor` checks: what `keystone agent` would run with, given the same arguments (the CLI builds it
// from them, so this room never reads a command line).
import type { TrustSetting } from '../agent/agent-types.js';
import type { Labels } from '../core/labels.js';
import type { TrustedFileRef } from '../runtime/trusted-file.js';
import type { SettingsVerdict } from './settings-check.js';

/** The agent's source, or why the arguments name none it could follow. */
export type DoctorSource =
  | { kind: 'dir'; root: string }
  /** `repo`: an http(s) URL, or an absolute path to a local repository. */
  /** `gitNotes`: reports are pushed as Git notes, to `statusRepo` (`--status-repo`) or else to `repo` itself. */
  | {
      kind: 'git';
      repo: string;
      ref: string;
      token?: string;
      tokenProblem?: string;
      statusRepo?: string;
      statusToken?: string;
      gitNotes: boolean;
    }
  | { kind: 'none'; problem: string };

export interface DoctorSetup {
  /** What the agent's own checks of its flags and configuration said (settings-check.ts). */
  settings: SettingsVerdict;
  /** Absolute. */
  stateDir: string;
  source: DoctorSource;
  /** Repository-relative (`--plan`); absent when fleet.toml picks the plan. */
  planFile?: string;
  device: string;
  labels: Labels;
  /** `--trusted-key` files (absolute), `--threshold` as given, `--allow-unsigned`. */
  trust: { unsigned: boolean; keyFiles: string[]; threshold?: string };
  /**
   * The keyring and limits (--threshold, --max-age, --max-clock-skew, --require-ref) the agent verifies each revision
   * with, as it builds them; absent with --allow-unsigned, and when they cannot be built (trusted-keys says why).
   */
  verification?: Extract<TrustSetting, { unsigned: false }>;
  /** The configuration file, trusted keys and secret files the agent would read (cli/trusted-files.ts); none when absent. */
  trustedFiles?: TrustedFileRef[];
  /** The device policy's --allow-root: root process users are allowed. */
  allowRoot: boolean;
  /** `--enrollment-key` files and `--certificate` (absolute); absent or empty: the device checks no certificates. */
  enrollment?: { keyFiles: string[]; certificateFile?: string };
}
