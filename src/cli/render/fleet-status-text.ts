// The fleet view for a terminal: one row per target with its counts, the devices not on the commit named under
// it, the waves of the commit's rollout when it has one, and with --devices one line per device. Columns are padded
// so the table reads in a terminal and a CI log.
import { formatDuration, parseDuration } from '../../core/duration.js';
import { describeRollout } from '../../core/rollout.js';
import type { RolloutView, WaveView } from '../../fleet-view/fleet-rollout-view.js';
import { UNKNOWN_AGENT_VERSION } from '../../fleet-view/agent-version-counts.js';
import type { DeviceView } from '../../fleet-view/device-view.js';
import type { FleetView, TargetView } from '../../fleet-view/fleet-view.js';
import { utc } from './status-table.js';

export interface FleetStatusMeta {
  /** What was asked for: `main`, `HEAD`, a commit id. */
  label: string;
  /** The --silent-after duration as given (`10m`). */
  silentAfter: string;
}

export const short = (commit: string) => commit.slice(0, 12);

/** `success`, `on 9f8e7d6a0b1c (older)`, `silent`, `waiting`. */
export function deviceStateText(d: DeviceView): string {
  if (d.claimed !== undefined) return `${d.state} (says ${d.claimed})`;
  if (d.state === 'other-commit' && d.commit)
    return `on ${short(d.commit)}${d.relation === 'unknown' ? '' : ` (${d.relation})`}`;
  return d.state;
}

export function sinceText(view: FleetView): string {
  const reported = view.devices.some((d) => d.commit === view.commit);
  return `${utc(Date.parse(view.silentSince))} (${reported ? 'the first report on this commit' : 'the commit time: no report on it yet'})`;
}

function table(rows: string[][]): string[] {
  // reduce, not Math.max(...spread): --devices on a fleet of 100,000 is that many rows.
  const widths = rows[0]!.map((_, i) => rows.reduce((w, r) => Math.max(w, r[i]!.length), 0));
  return rows.map((r) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
}

const COUNTS: [keyof TargetView, string][] = [
  ['devices', 'devices'],
  ['success', 'success'],
  ['failure', 'failure'],
  ['pending', 'pending'],
  ['error', 'error'],
  ['otherCommit', 'other commit'],
  ['silent', 'silent'],
  ['waiting', 'waiting'],
];

/** Shown only when some report was not counted (SPEC §15): a fleet without enrolment keeps its table. */
const NOT_COUNTED: [keyof TargetView, string][] = [
  ['forged', 'forged'],
  ['revoked', 'revoked'],
  ['unverified', 'unverified'],
];

/** The count columns of this view. */
export function countColumns(view: FleetView): [keyof TargetView, string][] {
  return view.targets.some((t) => t.forged + t.revoked + t.unverified > 0) ? [...COUNTS, ...NOT_COUNTED] : COUNTS;
}

/** `up 3h0m0s, load 0.12, mem 1.2 GB, disk 3.4 GB, 48.5 °C`, or `-`. */
export function healthText(d: DeviceView): string {
  const h = d.health;
  if (!h) return '-';
  const gb = (b: number) => (b >= 1e9 ? `${(b / 1e9).toFixed(1)} GB` : `${Math.round(b / 1e6)} MB`);
  const parts = [
    ...(h.uptimeS !== undefined ? [`up ${formatDuration(Math.round(h.uptimeS) * 1000)}`] : []),
    ...(h.load1 !== undefined ? [`load ${h.load1}`] : []),
    ...(h.memFreeBytes !== undefined ? [`mem ${gb(h.memFreeBytes)}`] : []),
    ...(h.diskFreeBytes !== undefined ? [`disk ${gb(h.diskFreeBytes)}`] : []),
    ...(h.tempC !== undefined ? [`${h.tempC} °C`] : []),
  ];
  return parts.join(', ') || '-';
}

/** What stands out in a target: devices on other commits, silent ones. */
function notes(view: FleetView, t: TargetView): string[] {
  const members = view.devices.filter((d) => d.target === t.name);
  const other = members.filter((d) => d.state === 'other-commit').map((d) => `${d.device} ${deviceStateText(d)}`);
  const silent = members
    .filter((d) => d.state === 'silent')
    .map((d) => (d.commit ? `${d.device} (last on ${short(d.commit)})` : `${d.device} (never reported)`));
  const notCounted = members
    .filter((d) => d.claimed !== undefined)
    .map((d) => `${d.device} ${d.state}: ${d.reportReason ?? ''}`);
  return [
    ...(other.length ? [`  ${t.name}: on another commit: ${other.join(', ')}`] : []),
    ...(silent.length ? [`  ${t.name}: silent: ${silent.join(', ')}`] : []),
    ...notCounted.map((n) => `  ${t.name}: not counted: ${n}`),
  ];
}

/**
 * `0.2.0 ×12, 0.1.0 ×3 (wave canary: 1 of 1 on 0.2.0; wave everyone: 11 of 14 on 0.2.0)`: the devices by the agent
 * version they run, and how far the version the commit's fleet.toml names has come per wave (else per target).
 * Undefined when no report names a version and the file names none: a fleet of older agents keeps its output.
 */
export function agentVersionsText(view: FleetView): string | undefined {
  const counts = Object.entries(view.agentVersions ?? {});
  if (!view.agentUpdate && counts.every(([v]) => v === UNKNOWN_AGENT_VERSION)) return undefined;
  const progress = (view.agentUpdate ?? []).map(
    (p) =>
      `${p.wave !== undefined ? `wave ${p.wave}` : `target ${p.target ?? '?'}`}: ${p.on} of ${p.devices} on ${p.version}`,
  );
  return `${counts.map(([v, n]) => `${v} ×${n}`).join(', ') || 'no devices'}${progress.length ? ` (${progress.join('; ')})` : ''}`;
}

/** `5 %`, `named: ring=canary`, `named: gw-1, gw-2, gw-3 +4`. */
export function waveRule(w: WaveView): string {
  if (w.percent !== undefined) return `${w.percent} %`;
  const sel = Object.entries(w.named?.selector ?? {}).map(([k, v]) => `${k}=${v}`);
  const devices = w.named?.devices ?? [];
  const list = devices.length > 3 ? [...devices.slice(0, 3), `+${devices.length - 3}`] : devices;
  return `named: ${[...sel, ...list].join(', ') || '-'}`;
}

/** `4m10s` left (rounded up to the second, as the gate says it), `baked`, or `-` (no success yet, the last wave). */
export function bakeText(w: WaveView): string {
  if (w.bakeLeftMs === undefined) return '-';
  return w.bakeLeftMs > 0 ? formatDuration(Math.ceil(w.bakeLeftMs / 1000) * 1000) : 'baked';
}

/** `waiting for canary`, `halted`, `baking`. */
export function waveStateText(w: WaveView): string {
  return w.state === 'waiting' && w.waitingFor !== undefined ? `waiting for ${w.waitingFor}` : w.state;
}

/** `halted at canary: 3 of 20 failed` */
export const haltedText = (r: RolloutView) =>
  r.halted ? `halted at ${r.halted.wave}: ${r.halted.failed} of ${r.halted.of} failed` : undefined;

export const BAKE_ESTIMATE_NOTE =
  "bake left: estimated from the devices' own report times; each device times its bake on the Git host's clock";

/** `canary 5 %, early 25 %, everyone 100 %; bake 10m0s, min_success 3, abort above 10 % failed` */
export function rolloutSettingsText(r: RolloutView): string {
  const waves = r.waves.map((w) => ({ name: w.name, ...(w.percent !== undefined && { percent: w.percent }) }));
  return describeRollout({
    waves,
    bakeMs: parseDuration(r.bake) ?? 0,
    minSuccess: r.minSuccess,
    abortFailurePercent: r.abortFailurePercent,
  });
}

function rolloutLines(r: RolloutView): string[] {
  const halted = haltedText(r);
  return [
    `rollout of ${short(r.commit)}: ${rolloutSettingsText(r)}`,
    ...(halted ? [halted] : []),
    ...table([
      ['wave', 'rule', 'devices', 'applied', 'failed', 'applying', 'held', 'bake left', 'state'],
      ...r.waves.map((w) => [
        w.name,
        waveRule(w),
        String(w.devices),
        String(w.success),
        String(w.failed),
        String(w.applying),
        String(w.held),
        bakeText(w),
        waveStateText(w),
      ]),
    ]),
    ...(r.waves.some((w) => w.bakeLeftMs !== undefined) ? [BAKE_ESTIMATE_NOTE] : []),
    ...(r.notCounted ?? []).map(
      (n) => `not counted: ${n.device} ${n.state} in ${n.wave} (${n.verdict}: ${n.reason ?? ''})`,
    ),
  ];
}

export function renderFleetStatusText(
  view: FleetView,
  meta: FleetStatusMeta,
  opts: { devices?: boolean; rollout?: RolloutView } = {},
): string {
  const out = [
    `fleet status of ${short(view.commit)} (${meta.label})${view.fleetFile ? '' : ', no fleet.toml at this commit'}`,
    `silent: no report within ${meta.silentAfter} of ${sinceText(view)}${view.silenceCounts ? '' : '; not yet'}`,
    '',
    ...table([
      ['target', 'plan', ...countColumns(view).map(([, h]) => h)],
      ...view.targets.map((t) => [t.name, t.plan ?? '-', ...countColumns(view).map(([k]) => String(t[k]))]),
    ]),
  ];
  const extra = view.targets.flatMap((t) => notes(view, t));
  if (extra.length) out.push('', ...extra);
  const agents = agentVersionsText(view);
  if (agents) out.push('', `agent versions: ${agents}`);
  if (opts.rollout) out.push('', ...rolloutLines(opts.rollout));
  if (opts.devices) {
    out.push('');
    // The wave column only with a rollout: without one the table stays as it always was.
    const waves = opts.rollout !== undefined;
    // The report column once reports were checked; agent and health once any report carries them.
    const checked = view.devices.some((d) => d.report !== undefined);
    const detailed = view.devices.some((d) => d.agent !== undefined || d.health !== undefined);
    if (view.devices.length === 0) out.push('no devices');
    else {
      const rows = table([
        [
          'device',
          'target',
          ...(waves ? ['wave'] : []),
          'state',
          ...(checked ? ['report'] : []),
          'time',
          ...(detailed ? ['agent', 'health'] : []),
          'description',
        ],
        ...view.devices.map((d) => [
          d.device,
          d.target,
          ...(waves ? [d.wave ?? '-'] : []),
          deviceStateText(d),
          ...(checked ? [d.report ?? '-'] : []),
          d.at ? utc(Date.parse(d.at)) : '-',
          ...(detailed ? [d.agent ?? '-', healthText(d)] : []),
          d.description,
        ]),
      ]);
      // A failure's last log lines under its row: what the device saw, without a trip to it.
      out.push(rows[0]!, ...view.devices.flatMap((d, i) => [rows[i + 1]!, ...(d.log ?? []).map((l) => `    | ${l}`)]));
    }
  }
  return out.join('\n') + '\n';
}
