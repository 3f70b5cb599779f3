// A device's row of the fleet view (fleet-view.ts): its state and what its shown report carries beside it. Apart from
// the grouping so that the row's shape, and its details read from a report, stand on their own.
import type { Verdict } from '../identity/report-verifier.js';
import type { DeviceHealth } from '../report/commit-status.js';
import type { Ancestry, DeviceReport } from './fleet-view-input.js';

/**
 * forged, revoked, unverified: its report on the commit is not counted (SPEC §15): not its own, or not checkable where
 * the fleet requires enrolment. `claimed` says what that report said.
 */
export const DEVICE_STATES = [
  'success',
  'failure',
  'pending',
  'error',
  'other-commit',
  'silent',
  'waiting',
  'forged',
  'revoked',
  'unverified',
] as const;
export type DeviceState = (typeof DEVICE_STATES)[number];

export interface DeviceView {
  device: string;
  /** The target group it is counted in. */
  target: string;
  /** Its rollout wave, only when the commit has a `[rollout]`: null when neither a report nor a rollout ref tells. */
  wave?: string | null;
  state: DeviceState;
  /** The commit of the report shown: this commit, another one, or null when the device never reported. */
  commit: string | null;
  /** For a report on another commit: whether that commit is older (an ancestor of this one), newer, or unknown. */
  relation: Ancestry | null;
  /** ISO time of the report shown, or null. */
  at: string | null;
  description: string;
  /** The verdict on the report shown (SPEC §15), when reports were checked. */
  report?: Verdict;
  /** Why it is not verified. */
  reportReason?: string;
  /** What a report that is not counted said (its state). */
  claimed?: string;
  /** What the report shown carries beside its state (issue 29): the agent's version, the device's health, log lines. */
  agent?: string;
  health?: DeviceHealth;
  log?: readonly string[];
}

/** The agent version, health and log lines a report carries (status-note.ts's fields), as the view shows them. */
export function detailsOf(r: DeviceReport): Pick<DeviceView, 'agent' | 'health' | 'log'> {
  const f = r.fields;
  const num = (k: string) => {
    const v = f[k] === undefined ? NaN : Number(f[k]);
    return Number.isFinite(v) ? v : undefined;
  };
  const health: DeviceHealth = {};
  const put = (key: keyof DeviceHealth, field: string) => {
    const v = num(field);
    if (v !== undefined) health[key] = v;
  };
  put('uptimeS', 'uptime');
  put('load1', 'load');
  put('memFreeBytes', 'mem');
  put('diskFreeBytes', 'disk');
  put('tempC', 'temp');
  return {
    ...(f.agent !== undefined && { agent: f.agent }),
    ...(Object.keys(health).length > 0 && { health }),
    ...(r.log?.length && { log: r.log }),
  };
}
