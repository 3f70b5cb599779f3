// The gate of SPEC §14, decided on each device from the fleet's own reports: a device in wave k applies a commit
// once the nearest earlier wave with devices has enough successes for it, the oldest of them a bake old, and no
// wave up to its own has failed past the abort threshold. Pure: the reports are read, and the first success
// observed and the time measured, by the caller (agent/rollout-gate-runner.ts) on the Git host's clock.
import { formatDuration } from './duration.js';
import type { Rollout } from './rollout.js';

/** Where a device stands on one commit, as its rollout ref says. `halted`: held for good, never applied. */
export type RolloutState = 'held' | 'applying' | 'success' | 'failure' | 'error' | 'halted';
export const ROLLOUT_STATES: readonly RolloutState[] = ['held', 'applying', 'success', 'failure', 'error', 'halted'];

/** One device's report on one commit, in the wave that commit's fleet.toml gave it. */
export interface RolloutReport {
  wave: string;
  device: string;
  commit: string;
  state: RolloutState;
}

export interface WaveCount {
  wave: string;
  /** Devices known in the wave: any report, on any commit, under its name, and those its `devices` list names. */
  devices: number;
  success: number;
  /** failure and error: the commit did not work there. */
  failed: number;
  applying: number;
  held: number;
}

/** Per wave of `rollout`, in order: who is in it and how the commit went there. */
export function waveCounts(rollout: Pick<Rollout, 'waves'>, reports: readonly RolloutReport[], commit: string): WaveCount[] {
  const members = new Map<string, Set<string>>();
  const states = new Map<string, Map<string, RolloutState>>();
  // A device a wave names is in it before it has ever reported (a fleet starting together), unless an earlier wave
  // names it too (the first wave that names a device takes it).
  const named = new Set<string>();
  for (const w of rollout.waves) {
    const m = new Set((w.devices ?? []).filter((d) => !named.has(d)));
    for (const d of m) named.add(d);
    members.set(w.name, m);
  }
  for (const r of reports) {
    let m = members.get(r.wave);
    if (!m) members.set(r.wave, (m = new Set()));
    m.add(r.device);
    if (r.commit !== commit) continue;
    let s = states.get(r.wave);
    if (!s) states.set(r.wave, (s = new Map()));
    s.set(r.device, r.state);
  }
  return rollout.waves.map((w) => {
    const c: WaveCount = { wave: w.name, devices: members.get(w.name)?.size ?? 0, success: 0, failed: 0, applying: 0, held: 0 };
    for (const st of states.get(w.name)?.values() ?? []) {
      if (st === 'success') c.success++;
      else if (st === 'failure' || st === 'error') c.failed++;
      else if (st === 'applying') c.applying++;
      else c.held++;
    }
    return c;
  });
}

/** Failures past the threshold: strictly more than `abortFailurePercent` of the wave's devices. */
export function waveHalted(c: WaveCount, abortFailurePercent: number): boolean {
  return c.devices > 0 && c.failed > 0 && (c.failed * 100) / c.devices > abortFailurePercent;
}

export interface GateInput {
  rollout: Rollout;
  /** The device's wave, by index into rollout.waves. */
  wave: number;
  commit: string;
  reports: readonly RolloutReport[];
  /** Every report was read; false when the reader took a sample of the fleet (large fleets): then the count must reach min_success in the sample. */
  complete: boolean;
  /**
   * When this device first saw, for this commit, a success of wave `w` (key `w`) or wave `w` without any device
   * (key `empty:w`), on the Git host's clock (ms); undefined: not yet.
   */
  seen: (key: string) => number | undefined;
  /** Now, on the Git host's clock (ms). */
  now: number;
  /** This device ran exactly this plan successfully before (a revert to a known-good state): never held. */
  knownGood: boolean;
}

/** What the caller records at `now` for the next decision (see GateInput.seen). */
interface Observing {
  observe: string[];
}

export type GateDecision =
  | ({ kind: 'open'; reason: string } & Observing)
  | ({
      kind: 'held';
      /** The wave waited for. */
      waitingFor: string;
      successes: number;
      needed: number;
      /** Left of the bake once it has begun; undefined before the first success. */
      bakeLeftMs?: number;
      reason: string;
    } & Observing)
  | ({ kind: 'halted'; wave: string; failed: number; of: number; reason: string } & Observing);

const bakeText = (ms: number) => formatDuration(Math.ceil(ms / 1000) * 1000);

export function decideGate(g: GateInput): GateDecision {
  if (g.knownGood) return { kind: 'open', reason: 'a plan this device ran successfully before: not held by the waves', observe: [] };
  const counts = waveCounts(g.rollout, g.reports, g.commit);
  // Up to the device's own wave: a later wave cannot have applied it before this one.
  for (const c of counts.slice(0, g.wave + 1))
    if (waveHalted(c, g.rollout.abortFailurePercent))
      return { kind: 'halted', wave: c.wave, failed: c.failed, of: c.devices, reason: `halted at ${c.wave}: ${c.failed} of ${c.devices} failed`, observe: [] };
  const observe: string[] = [];
  const since = (key: string, now: boolean) => {
    const at = g.seen(key);
    if (at !== undefined || !now) return at;
    observe.push(key);
    return g.now;
  };
  // The nearest earlier wave with devices. A wave nobody is known in may be empty (a small fleet's 5 %) or may be
  // devices that have not looked yet (a fleet starting together): it passes its turn on only once it has stayed
  // empty for a bake, as this device saw it.
  let prev: WaveCount | undefined;
  for (let j = g.wave - 1; j >= 0 && !prev; j--) {
    const c = counts[j]!;
    if (c.devices > 0) {
      prev = c;
      break;
    }
    const left = since(`empty:${c.wave}`, true)! + g.rollout.bakeMs - g.now;
    if (left > 0)
      return { kind: 'held', waitingFor: c.wave, successes: 0, needed: 1, reason: `held: waiting for wave ${c.wave} (no device known in it yet; its turn passes in ${bakeText(left)})`, observe };
  }
  if (!prev) return { kind: 'open', reason: g.wave === 0 ? `wave ${counts[0]!.wave} goes first` : 'no earlier wave has devices', observe };
  const needed = g.complete ? Math.min(g.rollout.minSuccess, prev.devices) : g.rollout.minSuccess;
  const first = since(prev.wave, prev.success > 0);
  const bakeLeftMs = first === undefined ? undefined : Math.max(0, first + g.rollout.bakeMs - g.now);
  if (prev.success >= needed && bakeLeftMs === 0)
    return { kind: 'open', reason: `wave ${prev.wave} has ${prev.success} of ${needed} successes, baked ${formatDuration(g.rollout.bakeMs)}`, observe };
  const baking = bakeLeftMs === undefined ? '' : bakeLeftMs > 0 ? `, baking ${bakeText(bakeLeftMs)} left` : ', baked';
  return {
    kind: 'held',
    waitingFor: prev.wave,
    successes: prev.success,
    needed,
    ...(bakeLeftMs !== undefined && { bakeLeftMs }),
    reason: `held: waiting for wave ${prev.wave} (${Math.min(prev.success, needed)} of ${needed} successes${baking})`,
    observe,
  };
}
