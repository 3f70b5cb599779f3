// A pid alone is not an identity (pids are reused): a process is its pid plus its start time from /proc.
import { readFileSync, readdirSync } from 'node:fs';

/** The fields of /proc/<pid>/stat the runtime uses. */
export interface ProcStat {
  pid: number;
  /** The command name (field 2), which may contain spaces and parentheses. */
  comm: string;
  /** One letter: R, S, D, Z (zombie), X (dead), T, t, I … */
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Field 22: clock ticks since boot, kept as the decimal text to compare exactly. */
  startTime: string;
}

/** Parses the text of /proc/<pid>/stat; splits at the LAST ')' because comm is free text. */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  // After ") " come fields 3, 4, … : index i holds field i + 3.
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const state = rest[0];
  const startTime = rest[19];
  if (!Number.isInteger(pid) || state === undefined || startTime === undefined || !/^\d+$/.test(startTime))
    return undefined;
  return {
    pid,
    comm: text.slice(open + 1, close),
    state,
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    session: Number(rest[3]),
    startTime,
  };
}

/** Reads /proc/<pid>/stat, or undefined when there is no such process (or it cannot be read). */
export function readProcStat(pid: number): ProcStat | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The start time (field 22) of `pid`, the second half of a process identity; undefined when it does not exist. */
export function processStartTime(pid: number): string | undefined {
  return readProcStat(pid)?.startTime;
}

/** The real uid of `pid` (the `Uid:` line of /proc/<pid>/status); undefined when there is no such process. */
export function processUid(pid: number): number | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Uid:'));
    return line === undefined ? undefined : Number(line.split(/\s+/)[1]);
  } catch {
    return undefined;
  }
}

/** True when `pid` is still the very process recorded with `startTime` (a reused pid has another start time). */
export function isSameProcess(pid: number, startTime: string): boolean {
  return startTime !== '' && processStartTime(pid) === startTime;
}

const DEAD_STATES = new Set(['Z', 'X', 'x']);

/** True when `pid` exists and is not a zombie: a zombie has exited and only waits for its parent to reap it. */
export function isAlive(pid: number): boolean {
  const st = readProcStat(pid);
  return st !== undefined && !DEAD_STATES.has(st.state);
}

/** True for a stat whose process has exited (zombie or dead). */
export function isDeadState(state: string): boolean {
  return DEAD_STATES.has(state);
}

/** Every readable /proc/<pid>/stat, for scans of a process group or session. */
export function listProcesses(): ProcStat[] {
  const out: ProcStat[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const st = readProcStat(Number(name));
    if (st) out.push(st);
  }
  return out;
}
