// A component is a whole process group (its own session, in fact): stopping it must reach every descendant.
import { isDeadState, listProcesses, readProcStat } from './proc-identity.js';

/** Injected time, so deadlines can be tested and the poll loop never depends on a wall-clock sleep. */
export interface PollClock {
  now(): number;
}

export const systemClock: PollClock = { now: () => performance.now() };

/**
 * The live processes started by the leader `pid` (recorded with `startTime`): members of its process group or
 * its session, started no earlier than it. Empty when `pid` now belongs to another process: a pid whose group
 * still has members is never reused, so a live pid with another start time means our group is long gone.
 */
export function groupMembers(pid: number, startTime: string): number[] {
  const leader = readProcStat(pid);
  if (leader && leader.startTime !== startTime) return [];
  let start: bigint;
  try {
    start = BigInt(startTime);
  } catch {
    return [];
  }
  return listProcesses()
    .filter((p) => (p.pgrp === pid || p.session === pid) && !isDeadState(p.state) && BigInt(p.startTime) >= start)
    .map((p) => p.pid);
}

/** Sends `signal` to the group `-pid` and to any session member that moved to another group; returns how many were live. */
export function signalGroup(pid: number, startTime: string, signal: NodeJS.Signals): number {
  const members = groupMembers(pid, startTime);
  if (members.length === 0) return 0;
  trySignal(-pid, signal);
  for (const m of members) if (readProcStat(m)?.pgrp !== pid) trySignal(m, signal);
  return members.length;
}

function trySignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ESRCH' && code !== 'EPERM') throw e;
  }
}

/**
 * Polls `done` until it holds (true) or `deadline` (on `clock`) passes (false). The first checks are quick
 * (`pollMs`), later ones back off to `maxPollMs`: a long grace period must not rescan /proc 40 times a second.
 */
export async function pollUntil(
  done: () => boolean,
  deadline: number,
  clock: PollClock = systemClock,
  pollMs = 10,
  maxPollMs = 200,
): Promise<boolean> {
  let delay = pollMs;
  for (;;) {
    if (done()) return true;
    const left = deadline - clock.now();
    if (left <= 0) return false;
    await new Promise((r) => setTimeout(r, Math.min(delay, left)));
    delay = Math.min(maxPollMs, delay * 1.5);
  }
}

/** What a group stop did, for the executor's report. */
export interface GroupStopResult {
  /** Processes that were live when the stop began. */
  found: number;
  /** True when SIGKILL was needed after the grace period. */
  killed: boolean;
  /** True when the group was gone at the end. */
  gone: boolean;
}

/**
 * SIGTERM to the whole group, then SIGKILL once `graceMs` has passed without it disappearing, then waits up
 * to `killWaitMs` for the kernel to finish. Grandchildren that ignore SIGTERM are reached by the SIGKILL.
 */
export async function stopGroup(
  pid: number,
  startTime: string,
  graceMs: number,
  opts: { clock?: PollClock; killWaitMs?: number; pollMs?: number } = {},
): Promise<GroupStopResult> {
  const clock = opts.clock ?? systemClock;
  const gone = () => groupMembers(pid, startTime).length === 0;
  const found = signalGroup(pid, startTime, 'SIGTERM');
  if (found === 0) return { found, killed: false, gone: true };
  if (await pollUntil(gone, clock.now() + Math.max(0, graceMs), clock, opts.pollMs))
    return { found, killed: false, gone: true };
  signalGroup(pid, startTime, 'SIGKILL');
  const ok = await pollUntil(gone, clock.now() + (opts.killWaitMs ?? 5000), clock, opts.pollMs);
  return { found, killed: true, gone: ok };
}

/** SIGKILL to the whole group at once (timeouts, leftovers of a finished script); waits until it is gone. */
export async function killGroup(
  pid: number,
  startTime: string,
  opts: { clock?: PollClock; killWaitMs?: number } = {},
): Promise<boolean> {
  const clock = opts.clock ?? systemClock;
  if (signalGroup(pid, startTime, 'SIGKILL') === 0) return true;
  return pollUntil(() => groupMembers(pid, startTime).length === 0, clock.now() + (opts.killWaitMs ?? 5000), clock);
}
