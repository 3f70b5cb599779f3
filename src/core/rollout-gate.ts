// The gate of SPEC §14, decided on each device from the fleet's own reports: a device in wave k applies a commit
// once the nearest earlier wave with devices has enough successes for it, the oldest of them a bake old, and no
// wave up to its own has failed past the abort threshold. Pure: the reports are read, and the first success
// observed and the time measured, by the caller (agent/rollout-gate.ts) on the Git host's clock.
import { formatDuration } from './duration.js';
import { waveHash, type Rollout } from './rollout.js';

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
  /**
   * Devices in the wave: each device once, in the wave of its report on this commit, else of its other reports, and
   * those the wave's `devices` list names. An estimate (sample × scale, plus every failure) when the wave was sampled.
   */
  devices: number;
  /** Successes seen: in a sampled wave, those of the sample (never scaled up: a gate may open later, not earlier). */
  success: number;
  /** failure and error: the commit did not work there. Always complete: failures are read whole. */
  failed: number;
  applying: number;
  held: number;
}

/** Whether a report under wave `i` can be the device's: a percent wave takes only names that hash into it. */
function admissible(
  rollout: Pick<Rollout, 'waves'>,
  i: number,
  device: string,
  listedIn: ReadonlyMap<string, number>,
): boolean {
  const w = rollout.waves[i]!;
  const listed = listedIn.get(device);
  if (listed !== undefined) return listed === i || w.selector !== undefined;
  if (w.percent !== undefined) {
    const h = waveHash(device);
    const lo = rollout.waves.slice(0, i).reduce((m, x) => (x.percent !== undefined ? x.percent : m), 0);
    return h >= lo && h < w.percent;
  }
  // A list alone takes only the devices it names; a selector, any device (labels are the device's own to say).
  return w.selector !== undefined;
}

/**
 * Per wave of `rollout`, in order: who is in it and how the commit went there. `scale` gives, per wave name, the
 * factor of a sampled read (buckets in all ÷ buckets read); absent: the wave was read whole. A report a device
 * cannot have written (a percent wave its name does not hash into, a list that does not name it) is not counted,
 * nor is a device counted in two waves.
 */
export function waveCounts(
  rollout: Pick<Rollout, 'waves'>,
  reports: readonly RolloutReport[],
  commit: string,
  scale: Readonly<Record<string, number>> = {},
): WaveCount[] {
  const index = new Map(rollout.waves.map((w, i) => [w.name, i]));
  // A device a wave's list names is in the first wave that names it, before it has ever reported.
  const listedIn = new Map<string, number>();
  rollout.waves.forEach((w, i) => {
    for (const d of w.devices ?? []) if (!listedIn.has(d)) listedIn.set(d, i);
  });
  const byDevice = new Map<string, RolloutReport[]>();
  for (const r of reports) {
    const i = index.get(r.wave);
    if (i === undefined || !admissible(rollout, i, r.device, listedIn)) continue;
    let list = byDevice.get(r.device);
    if (!list) byDevice.set(r.device, (list = []));
    list.push(r);
  }
  const counts = rollout.waves.map((w): WaveCount => ({
    wave: w.name,
    devices: 0,
    success: 0,
    failed: 0,
    applying: 0,
    held: 0,
  }));
  const sampledMembers = new Map<string, number>();
  const place = (device: string, i: number, st: RolloutState | undefined) => {
    const c = counts[i]!;
    if (st === 'failure' || st === 'error') {
      c.failed++;
      c.devices++;
      return;
    }
    if (scale[c.wave] === undefined) c.devices++;
    else sampledMembers.set(c.wave, (sampledMembers.get(c.wave) ?? 0) + 1);
    if (st === 'success') c.success++;
    else if (st === 'applying') c.applying++;
    else if (st !== undefined) c.held++;
    void device;
  };
  for (const [device, list] of byDevice) {
    // The last one read wins, should a device have two (a state moving between two reads).
    const onCommit = list.findLast((r) => r.commit === commit);
    const listed = listedIn.get(device);
    const i = onCommit
      ? index.get(onCommit.wave)!
      : listed !== undefined
        ? listed
        : Math.min(...list.map((r) => index.get(r.wave)!));
    place(device, i, onCommit?.state);
  }
  for (const [device, i] of listedIn) if (!byDevice.has(device)) place(device, i, undefined);
  for (const c of counts) {
    const f = scale[c.wave];
    if (f !== undefined) c.devices = c.failed + Math.round((sampledMembers.get(c.wave) ?? 0) * f);
  }
  return counts;
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
  /**
   * The waves read in a sample (large fleets), with their scale (buckets in all ÷ buckets read); a wave absent was
   * read whole. In a sampled wave min_success must be reached within the sample, and it is never taken for empty.
   */
  scale?: Readonly<Record<string, number>>;
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
  if (g.knownGood)
    return { kind: 'open', reason: 'a plan this device ran successfully before: not held by the waves', observe: [] };
  const scale = g.scale ?? {};
  const counts = waveCounts(g.rollout, g.reports, g.commit, scale);
  // Up to the device's own wave: a later wave cannot have applied it before this one.
  for (const c of counts.slice(0, g.wave + 1))
    if (waveHalted(c, g.rollout.abortFailurePercent))
      return {
        kind: 'halted',
        wave: c.wave,
        failed: c.failed,
        of: c.devices,
        reason: `halted at ${c.wave}: ${c.failed} of ${c.devices} failed`,
        observe: [],
      };
  const observe: string[] = [];
  const since = (key: string, now: boolean) => {
    const at = g.seen(key);
    if (at !== undefined || !now) return at;
    observe.push(key);
    return g.now;
  };
  // The nearest earlier wave with devices. A wave nobody is known in may be empty (a small fleet's 5 %) or may be
  // devices that have not looked yet (a fleet starting together): it passes its turn on only once it has stayed
  // empty for a bake, as this device saw it, in whole reads (a sample that misses a wave says nothing of it).
  let prev: WaveCount | undefined;
  for (let j = g.wave - 1; j >= 0 && !prev; j--) {
    const c = counts[j]!;
    if (c.devices > 0) {
      prev = c;
      break;
    }
    if (scale[c.wave] !== undefined)
      return {
        kind: 'held',
        waitingFor: c.wave,
        successes: 0,
        needed: g.rollout.minSuccess,
        reason: `held: waiting for wave ${c.wave} (none of its devices in this read's sample)`,
        observe,
      };
    const left = since(`empty:${c.wave}`, true)! + g.rollout.bakeMs - g.now;
    if (left > 0)
      return {
        kind: 'held',
        waitingFor: c.wave,
        successes: 0,
        needed: 1,
        reason: `held: waiting for wave ${c.wave} (no device known in it yet; its turn passes in ${bakeText(left)})`,
        observe,
      };
  }
  if (!prev)
    return {
      kind: 'open',
      reason: g.wave === 0 ? `wave ${counts[0]!.wave} goes first` : 'no earlier wave has devices',
      observe,
    };
  const needed = scale[prev.wave] === undefined ? Math.min(g.rollout.minSuccess, prev.devices) : g.rollout.minSuccess;
  const first = since(prev.wave, prev.success > 0);
  const bakeLeftMs = first === undefined ? undefined : Math.max(0, first + g.rollout.bakeMs - g.now);
  if (prev.success >= needed && bakeLeftMs === 0)
    return {
      kind: 'open',
      reason: `wave ${prev.wave} has ${prev.success} of ${needed} successes, baked ${formatDuration(g.rollout.bakeMs)}`,
      observe,
    };
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
