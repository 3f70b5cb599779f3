// The fleet view for a terminal: one row per target with its counts, the devices not on the commit named under
// it, and with --devices one line per device. Columns are padded so the table reads in a terminal and a CI log.
import type { DeviceView, FleetView, TargetView } from '../../status/fleet-view.js';
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
  if (d.state === 'other-commit' && d.commit) return `on ${short(d.commit)}${d.relation === 'unknown' ? '' : ` (${d.relation})`}`;
  return d.state;
}

export function sinceText(view: FleetView): string {
  const reported = view.devices.some((d) => d.commit === view.commit);
  return `${utc(Date.parse(view.silentSince))} (${reported ? 'the first report on this commit' : 'the commit time: no report on it yet'})`;
}

function table(rows: string[][]): string[] {
  // reduce, not Math.max(...spread): --devices on a fleet of 100,000 is that many rows.
  const widths = rows[0]!.map((_, i) => rows.reduce((w, r) => Math.max(w, r[i]!.length), 0));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
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

/** What stands out in a target: devices on other commits, silent ones. */
function notes(view: FleetView, t: TargetView): string[] {
  const members = view.devices.filter((d) => d.target === t.name);
  const other = members.filter((d) => d.state === 'other-commit').map((d) => `${d.device} ${deviceStateText(d)}`);
  const silent = members.filter((d) => d.state === 'silent').map((d) => (d.commit ? `${d.device} (last on ${short(d.commit)})` : `${d.device} (never reported)`));
  return [...(other.length ? [`  ${t.name}: on another commit: ${other.join(', ')}`] : []), ...(silent.length ? [`  ${t.name}: silent: ${silent.join(', ')}`] : [])];
}

export function renderFleetStatusText(view: FleetView, meta: FleetStatusMeta, opts: { devices?: boolean } = {}): string {
  const out = [
    `fleet status of ${short(view.commit)} (${meta.label})${view.fleetFile ? '' : ', no fleet.toml at this commit'}`,
    `silent: no report within ${meta.silentAfter} of ${sinceText(view)}${view.silenceCounts ? '' : '; not yet'}`,
    '',
    ...table([['target', 'plan', ...COUNTS.map(([, h]) => h)], ...view.targets.map((t) => [t.name, t.plan ?? '-', ...COUNTS.map(([k]) => String(t[k]))])]),
  ];
  const extra = view.targets.flatMap((t) => notes(view, t));
  if (extra.length) out.push('', ...extra);
  if (opts.devices) {
    out.push('');
    if (view.devices.length === 0) out.push('no devices');
    else
      out.push(
        ...table([
          ['device', 'target', 'state', 'time', 'description'],
          ...view.devices.map((d) => [d.device, d.target, deviceStateText(d), d.at ? utc(Date.parse(d.at)) : '-', d.description]),
        ]),
      );
  }
  return out.join('\n') + '\n';
}
