// The agent versions of the fleet view (SPEC §17; fleet-view.ts): every device counted by the version it runs, and
// how far the version the fleet file names has come per wave or target. Apart from the grouping: its own rules.
import semver from 'semver';
import type { DeviceView } from './device-view.js';
import type { ViewTarget } from './fleet-view-input.js';

/** The agent version of a device none of whose counted reports carries one (an older agent, or no report at all). */
export const UNKNOWN_AGENT_VERSION = 'unknown';

/** How far the agent version the fleet file names has come among a wave's (else a target's) devices. */
export interface AgentUpdateProgress {
  /** The wave counted (the commit has a `[rollout]`); else `target`. */
  wave?: string;
  target?: string;
  /** The version the commit's fleet.toml names for these devices. */
  version: string;
  devices: number;
  /** How many of them run it (their newest counted report says so). */
  on: number;
}

/** Newest first (semver), versions that do not parse after them by name, `unknown` last. */
function compareVersions(a: string, b: string): number {
  if (a === UNKNOWN_AGENT_VERSION || b === UNKNOWN_AGENT_VERSION)
    return (a === UNKNOWN_AGENT_VERSION ? 1 : 0) - (b === UNKNOWN_AGENT_VERSION ? 1 : 0);
  const va = semver.valid(a);
  const vb = semver.valid(b);
  if (va && vb) return semver.rcompare(va, vb) || (a < b ? -1 : a > b ? 1 : 0);
  if (va || vb) return va ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function agentVersionCounts(
  devices: readonly DeviceView[],
  running: ReadonlyMap<string, string>,
): Record<string, number> {
  const counts = new Map<string, number>();
  for (const d of devices) {
    const v = running.get(d.device) ?? UNKNOWN_AGENT_VERSION;
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  // A null-prototype object: a version is whatever a report says, `__proto__` included.
  const out = Object.create(null) as Record<string, number>;
  for (const v of [...counts.keys()].sort(compareVersions)) out[v] = counts.get(v)!;
  return out;
}

/**
 * Per wave (`waveOrder` given: the commit has a `[rollout]`; devices of no known wave are left out), else per target,
 * the devices the file names an agent version for and how many run it; undefined when the file names none.
 */
export function agentUpdateOf(
  devices: readonly DeviceView[],
  running: ReadonlyMap<string, string>,
  targets: readonly ViewTarget[],
  waveOrder: readonly string[] | undefined,
): AgentUpdateProgress[] | undefined {
  const wanted = new Map<string, string>();
  for (const t of targets) if (t.agentVersion !== undefined && !wanted.has(t.name)) wanted.set(t.name, t.agentVersion);
  if (wanted.size === 0) return undefined;
  const groups = new Map<string, AgentUpdateProgress>();
  for (const d of devices) {
    const version = wanted.get(d.target);
    if (version === undefined) continue;
    if (waveOrder && typeof d.wave !== 'string') continue;
    const key = JSON.stringify([waveOrder ? d.wave : d.target, version]);
    let g = groups.get(key);
    if (!g)
      groups.set(key, (g = { ...(waveOrder ? { wave: d.wave! } : { target: d.target }), version, devices: 0, on: 0 }));
    g.devices++;
    if (running.get(d.device) === version) g.on++;
  }
  const list = [...groups.values()];
  if (waveOrder) {
    // The rollout's order; a wave the file no longer has after them. Stable: devices come in target order.
    const rank = (w: string) => (waveOrder.includes(w) ? waveOrder.indexOf(w) : waveOrder.length);
    list.sort((a, b) => rank(a.wave!) - rank(b.wave!));
  }
  return list;
}
