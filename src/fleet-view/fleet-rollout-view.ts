// The rollout part of the fleet view (SPEC §14): per wave of one commit's `[rollout]`, who is in it, how the commit
// went there, how long the bake that opens the next wave has left, and where the rollout stands. Pure: the rollout
// refs and the notes are read elsewhere (fleet-rollout-read.ts, fleet-reports-read.ts), the time is passed in.
//
// The counts and the halt are the gate's own (waveCounts, waveHalted over the rollout refs), so the view halts a
// rollout exactly where the devices do. The bake is not: each device times it from when it first saw a wave's
// success, on the Git host's clock, and keeps that to itself. The view estimates it from the notes instead: the
// oldest success line of the wave on the commit, stamped by the reporting device's own clock, against the time of
// the read. A device with a skewed clock moves the estimate by its skew; the devices' decisions do not move.
import { formatDuration } from '../core/duration.js';
import { waveCounts, waveHalted, type RolloutReport, type WaveCount } from '../core/rollout-gate.js';
import type { Rollout, Wave } from '../core/rollout.js';
import type { DeviceReports } from './fleet-view-input.js';
import { isoTime } from '../core/iso-time.js';

/**
 * - done: the wave has the successes the next wave needs, baked (the last wave: every device known in it succeeded;
 *   a wave without devices passes its turn on);
 * - baking: it has them, and the bake of its oldest success is still running;
 * - applying: its devices may apply the commit, and it has not the successes yet;
 * - waiting: an earlier wave has not opened the gate yet (too few successes, or still baking);
 * - halted: it or an earlier wave failed past abort_failure_percent: the commit goes no further.
 */
export const WAVE_STATES = ['done', 'baking', 'applying', 'waiting', 'halted'] as const;
export type WaveState = (typeof WAVE_STATES)[number];

export interface WaveView {
  name: string;
  /** A share of the fleet: cumulative, the wave covers the devices hashing below it (and above the wave before). */
  percent?: number;
  /** The devices the wave names, by selector and/or list. */
  named?: { selector?: Record<string, string>; devices?: string[] };
  /** Devices known in the wave: any rollout ref under its name, on any commit. */
  devices: number;
  success: number;
  /** failure and error. */
  failed: number;
  applying: number;
  /** held and halted. */
  held: number;
  /** ISO time of the oldest success line of the wave on the commit (the device's own clock): the bake's estimated start. */
  firstSuccessAt?: string;
  /** Estimated time left of that bake before the next wave may apply; 0 once baked. Absent on the last wave, a halted one, and before any success. */
  bakeLeftMs?: number;
  /** The earlier wave this one waits for (state waiting). */
  waitingFor?: string;
  state: WaveState;
}

export interface RolloutView {
  commit: string;
  waves: WaveView[];
  /** The first wave that failed past abort_failure_percent: the rollout of the commit stops there for good. */
  halted?: { wave: string; failed: number; of: number };
  /** The [rollout] settings, as the view applied them. */
  bake: string;
  minSuccess: number;
  abortFailurePercent: number;
  /** Rollout refs of this commit the gates do not count (SPEC §15): forged, revoked, or unverified where enrolment is required. */
  notCounted?: Array<{ device: string; wave: string; state: string; verdict: string; reason?: string }>;
  /** Whether the gates count only reports of enrolled devices. */
  requireEnrolled?: boolean;
}

export interface RolloutViewInput {
  commit: string;
  /** The commit's committer time, ms: no bake starts before it (a device with an unset clock reports 1970). */
  commitTime: number;
  rollout: Rollout;
  /** Every rollout ref read (any commit): membership counts every commit, states this one. */
  refs: readonly RolloutReport[];
  /** The devices' notes: their success lines on `commit` date the bakes. */
  reports: readonly DeviceReports[];
  /** The time of the read, ms. */
  now: number;
}

/**
 * Each device's wave: the one its rollout ref on `commit` names, else the wave of one of its refs on another commit
 * (waves seldom move between commits). The notes' `wave=` field is the caller's to prefer.
 */
export function refWaves(refs: readonly RolloutReport[], commit: string): Map<string, string> {
  const any = new Map<string, string>();
  const on = new Map<string, string>();
  for (const r of refs) (r.commit === commit ? on : any).set(r.device, r.wave);
  for (const [d, w] of on) any.set(d, w);
  return any;
}

export function buildRolloutView(input: RolloutViewInput): RolloutView {
  const { rollout, commit, now } = input;
  const counts = waveCounts(rollout, input.refs, commit);
  const haltAt = counts.findIndex((c) => waveHalted(c, rollout.abortFailurePercent));
  const firstSuccess = oldestSuccesses(input);
  const last = rollout.waves.length - 1;

  // The estimate of each wave's bake for the next one: from its oldest success line, once the refs count a success.
  const bakeLeft = counts.map((c, i): number | undefined => {
    const since = firstSuccess.get(c.wave);
    if (i === last || c.success === 0 || since === undefined) return undefined;
    return Math.max(0, since + rollout.bakeMs - now);
  });
  /** Whether wave i has the successes the next wave needs, baked (decideGate's test, on the estimate). */
  const opens = (i: number): boolean => {
    const c = counts[i]!;
    return c.success >= Math.min(rollout.minSuccess, c.devices) && (bakeLeft[i] ?? 0) === 0;
  };

  const waves = rollout.waves.map((w, i): WaveView => {
    const c = counts[i]!;
    // As the gate: the nearest earlier wave that has devices decides; an empty one passes its turn on.
    let prev = -1;
    for (let j = i - 1; j >= 0 && prev < 0; j--) if (counts[j]!.devices > 0) prev = j;
    // A device of this wave that took the commit up found the gate open, whatever the estimate says (clocks differ,
    // and a revert to a known-good state is not held at all).
    const started = c.success + c.failed + c.applying > 0;
    const open = prev < 0 || opens(prev) || started;
    let state: WaveState;
    if (haltAt >= 0 && i >= haltAt) state = 'halted';
    else if (!open) state = 'waiting';
    else if (c.devices === 0) state = 'done';
    else if (i === last) state = c.success >= c.devices ? 'done' : 'applying';
    else if (c.success < Math.min(rollout.minSuccess, c.devices)) state = 'applying';
    else state = (bakeLeft[i] ?? 0) > 0 ? 'baking' : 'done';
    const since = firstSuccess.get(w.name);
    return {
      name: w.name,
      ...rule(w),
      devices: c.devices,
      success: c.success,
      failed: c.failed,
      applying: c.applying,
      held: c.held,
      ...(c.success > 0 && since !== undefined && { firstSuccessAt: isoTime(since) }),
      // A halted wave opens nothing: no bake to count down.
      ...(bakeLeft[i] !== undefined && state !== 'halted' && { bakeLeftMs: bakeLeft[i] }),
      ...(state === 'waiting' && { waitingFor: counts[prev]!.wave }),
      state,
    };
  });
  const h: WaveCount | undefined = counts[haltAt];
  return {
    commit,
    waves,
    ...(h && { halted: { wave: h.wave, failed: h.failed, of: h.devices } }),
    bake: formatDuration(rollout.bakeMs),
    minSuccess: rollout.minSuccess,
    abortFailurePercent: rollout.abortFailurePercent,
  };
}

function rule(w: Wave): Pick<WaveView, 'percent' | 'named'> {
  if (w.percent !== undefined) return { percent: w.percent };
  return {
    named: { ...(w.selector && { selector: { ...w.selector } }), ...(w.devices && { devices: [...w.devices] }) },
  };
}

/** Per wave, the oldest success line on the commit (ms, never before the commit). */
function oldestSuccesses(input: RolloutViewInput): Map<string, number> {
  const waves = refWaves(input.refs, input.commit);
  const out = new Map<string, number>();
  for (const r of input.reports) {
    const line = r.onCommit;
    if (!line || line.state !== 'success' || !Number.isFinite(line.at)) continue;
    // The line's own wave= first: it is what the device reported the commit with.
    const wave = line.fields.wave ?? waves.get(r.device);
    if (wave === undefined) continue;
    const at = Math.max(line.at, input.commitTime);
    const seen = out.get(wave);
    if (seen === undefined || at < seen) out.set(wave, at);
  }
  return out;
}
