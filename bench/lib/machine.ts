// The machine a bench ran on and how busy it was: its description, the load average, the CPU other processes used
// (sampled from /proc), the head of every results file and the "machine was busy" note.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval } from 'node:timers';
import { clockTicksPerSecond, cmdlineOf } from './processes.js';
import { fmt } from './stats.js';

export function machine() {
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpu: { count: cpus().length, model: cpus()[0]?.model.trim() },
  };
}

export const load1 = (): number => loadavg()[0]!;

/**
 * The head every results file starts with: which bench, when, on what, and how busy the machine was (`withGit`: the
 * version of git too, for the benches that talk to a Git server).
 */
export function resultsHead(
  bench: string,
  {
    loadBefore,
    loadAfter,
    othersPercent,
    withGit = false,
  }: { loadBefore: number; loadAfter: number; othersPercent: number; withGit?: boolean },
) {
  return {
    bench,
    date: new Date().toISOString(),
    ...machine(),
    ...(withGit && { git: spawnSync('git', ['--version'], { encoding: 'utf8' }).stdout.trim() }),
    loadAverage1m: { before: Math.round(loadBefore * 100) / 100, after: Math.round(loadAfter * 100) / 100 },
    othersCpuPercent: Math.round(othersPercent * 10) / 10,
  };
}

/** Busy clock ticks of the whole machine since boot: user + nice + system of /proc/stat (no irq, softirq, steal). */
function machineBusyTicks(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return f[0]! + f[1]! + f[2]!;
}

/** The others' CPU since othersCpu() was called. */
export interface OthersCpu {
  /** The others' share of the machine (all cores) in %, since othersCpu() was called. */
  percent(): number;
}

/**
 * How much CPU other processes used while the benchmark ran: the machine's busy time minus that of the bench's
 * own processes. Ours are the bench itself, every process whose command line names the run's work directory
 * (`marker`: the agent, supervisord, PM2's daemon, the programs), and their descendants; /proc is sampled twice
 * a second and each process counts with the last CPU time seen (a process's last half second before it exits
 * may be missed). A benchmark of process start-up on a 2-core machine is only as good as the machine is quiet,
 * and the load average cannot tell, since the bench's own processes make most of it.
 */
export function othersCpu(marker: string): OthersCpu {
  const hz = clockTicksPerSecond();
  const b0 = machineBusyTicks();
  const t0 = performance.now();
  const ours = new Map<string, number>(); // "pid:starttime" → last ticks seen
  const verdict = new Map<string, boolean>(); // "pid:starttime" → ours?
  interface Proc {
    pid: number;
    ppid: number;
    key: string;
    ticks: number;
  }
  const sample = () => {
    const procs: Proc[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let text;
      try {
        text = readFileSync(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue;
      }
      const r = text.slice(text.lastIndexOf(')') + 2).split(' ');
      procs.push({
        pid: Number(entry),
        ppid: Number(r[1]),
        key: `${entry}:${r[19]}`,
        ticks: Number(r[11]) + Number(r[12]),
      });
    }
    const byPid = new Map(procs.map((p) => [p.pid, p]));
    const isOurs = (p: Proc, depth = 0): boolean => {
      if (verdict.has(p.key)) return verdict.get(p.key)!;
      let v = p.pid === process.pid || Boolean(cmdlineOf(p.pid)?.includes(marker));
      if (!v && depth < 64) {
        const parent = byPid.get(p.ppid);
        v = parent !== undefined && parent.pid > 1 && isOurs(parent, depth + 1);
      }
      verdict.set(p.key, v);
      return v;
    };
    for (const p of procs) if (isOurs(p)) ours.set(p.key, p.ticks);
  };
  const before = (() => {
    sample();
    return new Map(ours);
  })();
  const timer = setInterval(sample, 500);
  timer.unref();
  return {
    percent() {
      sample();
      clearInterval(timer);
      let mine = 0;
      for (const [k, t] of ours) mine += t - (before.get(k) ?? 0);
      const others = machineBusyTicks() - b0 - mine;
      const capacity = ((performance.now() - t0) / 1000) * hz * cpus().length;
      return Math.max(0, (others / capacity) * 100);
    },
  };
}

/** The "machine was busy" note of apply-dry.bench.ts, from what other processes used (othersCpu) rather than the load average. */
export function busyNote(othersPercent: number, loadBefore: number, loadAfter: number): string | undefined {
  if (!(othersPercent >= 10)) return undefined;
  return (
    `note: other processes used ${fmt(othersPercent, 0)}% of the machine's ${cpus().length} CPUs during the run (load average ${fmt(loadBefore, 2)} before, ` +
    `${fmt(loadAfter, 2)} after): they competed with the processes measured, so the figures are noisy`
  );
}
