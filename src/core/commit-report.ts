// What a device reports on a commit (SPEC §8): the status, its state, its bounded details. Data only: the store keeps
// it (the outbox) below the reporters that deliver it (src/report/), so it lives in core.
import type { DeviceHealth } from './device-health.js';
import type { RolloutState } from './rollout-gate.js';

export type { DeviceHealth };

export type CommitState = 'pending' | 'success' | 'failure' | 'error';
export const COMMIT_STATES: readonly CommitState[] = ['pending', 'success', 'failure', 'error'];

/** GitHub refuses longer descriptions with a 422; Gitea and Forgejo store them cut. One limit for every reporter. */
export const MAX_DESCRIPTION = 140;

export interface CommitStatus {
  /** The commit id: 40 lowercase hex. */
  commit: string;
  state: CommitState;
  /** One line, at most MAX_DESCRIPTION characters (see describe()). */
  description: string;
  /** `keystone/<device>`: per device, so devices never overwrite each other. */
  context: string;
  targetUrl?: string;
  /** ms since the epoch: when the agent decided this status (not when it was delivered). */
  at: number;
  /**
   * What the fleet view groups by (SPEC §13–14), e.g. `{ target: 'pi4-eu' }`: keys and values are single words
   * (REPORT_FIELD_KEYS; values without spaces). Git notes carry them as `key=value`; GitHub has no place for them.
   */
  fields?: Readonly<Record<string, string>>;
  /**
   * Staged rollouts (SPEC §14): the device's rollout ref for this commit (rollout-refs.ts), written by the Git notes
   * reporter in the same push as the note; other reporters ignore it. `keep`: the other commits whose rollout refs
   * this device keeps (the one it runs, newer ones it holds); its refs for any other commit are deleted.
   */
  rollout?: { wave: string; state: RolloutState; keep: readonly string[] };
  /**
   * The order the agent decided statuses in (the outbox row id), across commits. The outbox keeps order only per
   * commit, so a status retried late may arrive after a newer commit's: a reporter must not let it undo the newer
   * one's rollout refs (git-notes-reporter.ts).
   */
  seq?: number;
  /**
   * What a report says beside its state (SPEC §8, issue 29), bounded: the agent's version, the device's health, and
   * on `failure` the last lines of the failing component's log (at most MAX_LOG_TAIL_LINES lines and
   * MAX_LOG_TAIL_BYTES bytes, control characters stripped, secret values scrubbed before they get here). Git notes
   * carry them (signed with the rest); GitHub has no place for them.
   */
  details?: ReportDetails;
}

export interface ReportDetails {
  /** The agent's version (package.json). */
  agent?: string;
  health?: DeviceHealth;
  /** On failure: the failing component's last log lines, oldest first, each `<component>: <line>`. */
  log?: readonly string[];
}

export const MAX_LOG_TAIL_LINES = 20;
export const MAX_LOG_TAIL_BYTES = 2048;

/** The fields a report may carry: the fleet target a device took its plan from, and its rollout wave. */
export const REPORT_FIELD_KEYS = ['target', 'wave'] as const;
