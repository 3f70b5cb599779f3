// The clock of the apply-dry bench: wall ms of each run after an untimed GC, CPU ms by measure, the measures in turns.
import { performance } from 'node:perf_hooks';

export const gc = (): void => globalThis.gc?.();
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** CPU time (user + system, every thread of the process) of each timed run, by measure: steadier than wall time on a busy machine. */
export const cpuMs: Record<string, number[]> = {};

/** Times `fn` once in wall-clock ms, after a GC that is not timed; its CPU time goes to cpuMs[key]. */
export async function timeOnce(fn: () => unknown, key?: string): Promise<number> {
  gc();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (key) (cpuMs[key] ??= []).push((c.user + c.system) / 1000);
  return ms;
}

/** Warms every measure up once (but those already `warm`), then runs them in turns `runs` times. Returns every run in ms, by measure. */
export async function timeInTurns(
  measures: Record<string, () => unknown>,
  runs: number,
  warm: string[] = [],
): Promise<Record<string, number[]>> {
  for (const [key, fn] of Object.entries(measures)) if (!warm.includes(key)) await fn();
  const out = Object.fromEntries(Object.keys(measures).map((k) => [k, [] as number[]]));
  for (let k = 0; k < runs; k++)
    for (const [key, fn] of Object.entries(measures)) out[key]!.push(await timeOnce(fn, key));
  return out;
}
