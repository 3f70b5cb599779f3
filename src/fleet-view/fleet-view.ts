// The fleet view of SPEC §13: every device's reports, grouped into the fleet file's targets, for one commit. Pure
// (the time is passed in, the reports are read elsewhere: fleet-reports-read.ts), so the grouping rules are testable
// on their own. Each device lands in exactly one target and exactly one bucket:
//   - success / failure / pending / error: it reported on this commit (its newest line for it);
//   - otherCommit: no report on this commit, but its newest report is on another commit, and it made that report
//     after the commit's reports began (it is alive, just not on this commit: held, pinned), or that commit is newer
//     (it moved on), or --silent-after has not passed yet (it may still be catching up);
//   - silent: no report on this commit and nothing at all from it since the reports on this commit began, once
//     --silent-after has passed since then (since the first report on the commit, or the commit's committer time
//     when nobody has reported yet; a note keeps each device's newest line only, so "first" is the earliest line
//     the notes still hold for the commit);
//   - waiting: the same as silent, before --silent-after has passed (a device named in fleet.toml that never
//     reported, say, on a commit pushed a minute ago).
// Rollouts (SPEC §14): when the commit's fleet.toml has `[rollout]`, each device also shows its wave (its line's
// `wave=`, else its rollout ref's); the per-wave counts are fleet-rollout-view.ts.
// Agent versions (SPEC §17): every device counted by the agent version its newest counted report carries (what it
// runs now, whatever the commit viewed; `unknown` when none says), and, when the commit's fleet.toml names one, per
// wave (else per target) how many of its devices run it (agent-version-counts.ts). A device's row: device-view.ts.
import type { CommitState } from '../report/commit-status.js';
import { agentUpdateOf, agentVersionCounts, type AgentUpdateProgress } from './agent-version-counts.js';
import { detailsOf, type DeviceState, type DeviceView } from './device-view.js';
import type { DeviceReports, FleetViewInput } from './fleet-view-input.js';
import { isoTime } from '../core/iso-time.js';

/** The group of devices whose reports carry no target (rejected devices, agents run with --plan). */
export const NO_TARGET = '(no target)';
/** The one group when the commit has no fleet.toml. */
export const NO_FLEET_FILE = '(no fleet.toml)';

export interface TargetView {
  name: string;
  /** The plan the fleet file gives it; null for the groups that are not targets of the file. */
  plan: string | null;
  /** How many devices are counted in this target (the length of members). */
  devices: number;
  success: number;
  failure: number;
  pending: number;
  error: number;
  otherCommit: number;
  silent: number;
  waiting: number;
  /** Devices whose report on the commit is not counted (SPEC §15). */
  forged: number;
  revoked: number;
  unverified: number;
  /** Device names, sorted. */
  members: string[];
}

export interface FleetView {
  commit: string;
  fleetFile: boolean;
  /** ISO time silence is counted from: the first report on this commit, or the commit's time. */
  silentSince: string;
  /** Whether --silent-after has passed since silentSince. */
  silenceCounts: boolean;
  targets: TargetView[];
  devices: DeviceView[];
  /** version → devices running it, newest version first, `unknown` last. */
  agentVersions: Record<string, number>;
  /** Only when the commit's fleet.toml names an agent version for some target: per wave, else per target. */
  agentUpdate?: AgentUpdateProgress[];
}

const BUCKET: Record<DeviceState, keyof Omit<TargetView, 'name' | 'plan' | 'devices' | 'members'>> = {
  success: 'success',
  failure: 'failure',
  pending: 'pending',
  error: 'error',
  'other-commit': 'otherCommit',
  silent: 'silent',
  waiting: 'waiting',
  forged: 'forged',
  revoked: 'revoked',
  unverified: 'unverified',
};

const REPORTED: readonly string[] = ['success', 'failure', 'pending', 'error'] satisfies CommitState[];

const iso = (ms: number): string | null => (Number.isFinite(ms) ? isoTime(ms) : null);

export function buildFleetView(input: FleetViewInput): FleetView {
  const { commit, targets, now, silentAfterMs } = input;
  // A device listed twice (it cannot be, from refs; a caller's slip) counts once: its first entry.
  const byDevice = new Map<string, DeviceReports>();
  for (const r of input.reports) if (!byDevice.has(r.device)) byDevice.set(r.device, r);
  for (const t of targets ?? []) for (const d of t.devices ?? []) if (!byDevice.has(d)) byDevice.set(d, { device: d });

  // A loop, not Math.min(...spread): that throws past ~100,000 arguments, and fleets get that large.
  let firstReport = Infinity;
  for (const r of byDevice.values()) {
    const at = r.onCommit?.counted === false ? undefined : r.onCommit?.at;
    if (at !== undefined && Number.isFinite(at) && at < firstReport) firstReport = at;
  }
  // Never before the commit itself: one board with an unset clock (reports stamped 1970) must not make the whole
  // fleet silent at once.
  const since = Number.isFinite(firstReport) ? Math.max(firstReport, input.commitTime) : input.commitTime;
  const silenceCounts = now - since >= silentAfterMs;

  const named = new Map<string, string>(); // device → the first target of the file that names it
  for (const t of targets ?? []) for (const d of t.devices ?? []) if (!named.has(d)) named.set(d, t.name);

  const running = new Map<string, string>(); // device → the agent version it runs, as its own reports say
  const devices: DeviceView[] = [...byDevice.values()].map((r) => {
    const shown = r.onCommit ?? r.newest;
    // Where a device is placed, and whether it is alive, only its own reports say: one that is not counted (forged,
    // revoked) decides neither its target nor its wave nor that it is not silent (issue 29 review).
    const ownNewest = r.newest?.counted === false ? undefined : r.newest;
    const own = (r.onCommit?.counted === false ? undefined : r.onCommit) ?? ownNewest;
    // The newest of its own reports that names a version: what runs now (an update since the commit viewed counts).
    const version = ownNewest?.fields.agent ?? (r.onCommit?.counted === false ? undefined : r.onCommit?.fields.agent);
    if (version !== undefined && version !== '') running.set(r.device, version);
    const reportedTarget = own?.fields.target;
    const target =
      targets === undefined ? NO_FLEET_FILE : (reportedTarget ?? (own ? undefined : named.get(r.device)) ?? NO_TARGET);
    let state: DeviceState;
    if (r.onCommit && r.onCommit.counted === false) state = r.onCommit.verification!.verdict as DeviceState;
    else if (r.onCommit) state = REPORTED.includes(r.onCommit.state) ? (r.onCommit.state as DeviceState) : 'error';
    // On a newer commit it has moved on; it is not silent about this one.
    else if (ownNewest && (ownNewest.at >= since || !silenceCounts || input.ancestry?.[ownNewest.commit] === 'newer'))
      state = 'other-commit';
    else state = silenceCounts ? 'silent' : 'waiting';
    const other = !r.onCommit && r.newest && r.newest.commit !== commit;
    // What it reported this commit with, else its rollout ref, else what it reported another commit with.
    const wave =
      input.waves &&
      ((r.onCommit?.counted === false ? undefined : r.onCommit)?.fields.wave ??
        input.waves.get(r.device) ??
        own?.fields.wave ??
        null);
    return {
      device: r.device,
      target,
      ...(wave !== undefined && { wave }),
      state,
      commit: shown?.commit ?? null,
      relation: other ? (input.ancestry?.[r.newest!.commit] ?? 'unknown') : null,
      at: shown ? iso(shown.at) : null,
      description: shown?.description ?? '',
      ...(shown?.verification && { report: shown.verification.verdict }),
      ...(shown?.verification?.reason !== undefined && { reportReason: shown.verification.reason }),
      ...(shown?.counted === false && { claimed: shown.state }),
      ...(shown && detailsOf(shown)),
    };
  });

  // Groups: the file's targets in file order, then targets reports name that the file does not (renamed, removed),
  // by name, then the devices with no target.
  const groups = new Map<string, TargetView>();
  const group = (name: string, plan: string | null) => {
    let g = groups.get(name);
    if (!g)
      groups.set(
        name,
        (g = {
          name,
          plan,
          devices: 0,
          success: 0,
          failure: 0,
          pending: 0,
          error: 0,
          otherCommit: 0,
          silent: 0,
          waiting: 0,
          forged: 0,
          revoked: 0,
          unverified: 0,
          members: [],
        }),
      );
    return g;
  };
  if (targets === undefined) group(NO_FLEET_FILE, null);
  for (const t of targets ?? []) group(t.name, t.plan);
  const unknown = [...new Set(devices.map((d) => d.target))].filter((n) => !groups.has(n) && n !== NO_TARGET).sort();
  for (const n of unknown) group(n, null);
  if (devices.some((d) => d.target === NO_TARGET)) group(NO_TARGET, null);

  const order = [...groups.keys()];
  devices.sort(
    (a, b) =>
      order.indexOf(a.target) - order.indexOf(b.target) || (a.device < b.device ? -1 : a.device > b.device ? 1 : 0),
  );
  for (const d of devices) {
    const g = groups.get(d.target)!;
    g.devices++;
    g[BUCKET[d.state]]++;
    g.members.push(d.device);
  }
  const agentUpdate = agentUpdateOf(devices, running, targets ?? [], input.waves && (input.waveOrder ?? []));
  return {
    commit,
    fleetFile: targets !== undefined,
    silentSince: iso(since) ?? isoTime(0),
    silenceCounts,
    targets: [...groups.values()],
    devices,
    agentVersions: agentVersionCounts(devices, running),
    ...(agentUpdate && { agentUpdate }),
  };
}
