// Figures: the clock the benches stamp events with, sleeping, and the statistics and number formats of every table.
import { performance } from 'node:perf_hooks';

/** Wall-clock milliseconds with sub-millisecond resolution (the same clock as Date.now() and the agent's log `time`). */
export const epochNow = (): number => performance.timeOrigin + performance.now();
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export const median = (xs: readonly number[]): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
export const quantile = (xs: readonly number[], q: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))]!;
};
export const fmt = (x: number | undefined | null, d = 0): string =>
  Number.isFinite(x) ? x!.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '—';
export const ratio = (x: number | undefined | null, ref: number | undefined | null): string =>
  Number.isFinite(x) && Number.isFinite(ref) && ref! > 0 ? `×${fmt(x! / ref!, 2)}` : '—';
export const round = (x: number | undefined | null, d = 1): number | null =>
  Number.isFinite(x) ? +x!.toFixed(d) : null;
