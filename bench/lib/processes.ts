// Processes: the clean environment, signals, /proc readers (state, CPU ticks, RSS, descriptors), directory sizes, and
// the clean-up that leaves no process behind.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from './stats.js';

/**
 * The environment every supervisor is started with in a comparison: what Keystone gives its components (PATH,
 * HOME, LANG) and nothing else. supervisord and PM2 hand their own environment down to the programs, and a
 * variable such as NODE_EXTRA_CA_CERTS (set on some machines) alone adds ~80 ms to every node start.
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    LANG: 'C.UTF-8',
    ...extra,
  };
}

export function signalPid(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

export function signalGroup(pgid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}

export function cmdlineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/** What procStat reads of /proc/PID/stat. */
export interface ProcStat {
  state: string;
  pgrp: number;
  ticks: number;
  withChildren: number;
}

/** Fields of /proc/PID/stat we use: state, pgrp, utime + stime (clock ticks). Undefined when gone. */
export function procStat(pid: number): ProcStat | undefined {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[i] is field i + 3 of proc(5): state 3, pgrp 5, utime 14, stime 15.
  const ticks = Number(rest[11]) + Number(rest[12]);
  // withChildren: plus cutime + cstime, the CPU of the children it has reaped.
  return { state: rest[0]!, pgrp: Number(rest[2]), ticks, withChildren: ticks + Number(rest[13]) + Number(rest[14]) };
}

export const isLive = (pid: number): boolean => {
  const s = procStat(pid);
  return s !== undefined && s.state !== 'Z' && s.state !== 'X';
};

/** VmRSS of a process in KiB (undefined when gone). */
export function rssKiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Open file descriptors of a process (entries of /proc/PID/fd; undefined when gone or not ours to read). */
export function fdCount(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

/** Bytes of the regular files under a directory, recursively (a missing directory is 0). */
export function dirBytes(dir: string): number {
  let total = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += dirBytes(p);
    else if (e.isFile()) total += statSync(p).size;
  }
  return total;
}

let clkTck: number | undefined;
export function clockTicksPerSecond(): number {
  if (clkTck === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    clkTck = Number(r.stdout?.trim()) || 100;
  }
  return clkTck;
}

/**
 * Ends what a benchmark left running: every pid in `pids` whose command line still contains `marker` (so a
 * reused pid is never touched) gets SIGKILL, to its process group when it leads one. Then it looks for any
 * process whose command line contains `marker` (a path unique to this run) and ends those by pid too.
 * Returns how many it had to kill.
 */
export async function killStragglers(pids: Iterable<number>, marker: string): Promise<number> {
  const victims = new Set<number>();
  for (const pid of new Set(pids)) if (isLive(pid) && cmdlineOf(pid)?.includes(marker)) victims.add(pid);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid !== process.pid && isLive(pid) && cmdlineOf(pid)?.includes(marker)) victims.add(pid);
  }
  for (const pid of victims) {
    if (procStat(pid)?.pgrp === pid) signalGroup(pid, 'SIGKILL');
    signalPid(pid, 'SIGKILL');
  }
  for (let k = 0; k < 100 && [...victims].some(isLive); k++) await sleep(20);
  return victims.size;
}

/** Ctrl-C (or SIGTERM) during a run: end every process whose command line names the run's work directory, then exit. */
export function cleanUpOnSignal(work: string, rm?: () => void): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      process.stderr.write(`\n${sig}: stopping what the benchmark started… `);
      void killStragglers([], work).then((n) => {
        process.stderr.write(`${n} process(es) ended\n`);
        rm?.();
        process.exit(130);
      });
    });
}
