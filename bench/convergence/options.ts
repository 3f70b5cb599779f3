// The convergence bench's options: the graphs, the concurrencies, runs, seed, ports and the health checks' interval.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { parseDuration } from '../../dist/core/duration.js';

/** A concurrency asked for: a number, or the agent's default (the number of cores). */
export type Concurrency = number | 'default';
/** A graph spec: N components (a random layered DAG), or A chains of B. */
export type Spec =
  { n: number; chains?: undefined; length?: undefined } | { n: number; chains: number; length: number };

export const START_TIMEOUT_MS = 120_000;

export const { values: opts } = parseArgs({
  options: {
    sizes: { type: 'string', default: '3x3,20,50' },
    concurrency: { type: 'string', default: '64,default' },
    runs: { type: 'string', default: '3' },
    'runs-limited': { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
    'port-base': { type: 'string', default: '31000' },
    profile: { type: 'string' },
    interval: { type: 'string', default: '50ms' },
  },
});
export const cores = availableParallelism();
/** A graph spec: a number N (a random layered DAG of N) or `AxB` (A independent chains of B). */
export const sizes: Spec[] = opts.sizes.split(',').map((s) => {
  const m = /^(\d+)x(\d+)$/.exec(s.trim());
  return m ? { chains: Number(m[1]), length: Number(m[2]), n: Number(m[1]) * Number(m[2]) } : { n: Number(s.trim()) };
});
export const concurrencies: Concurrency[] = opts.concurrency
  .split(',')
  .map((s) => (s.trim() === 'default' ? 'default' : Number(s.trim())));
export const runs = Number(opts.runs);
export const runsLimited = Number(opts['runs-limited']);
export const seed = Number(opts.seed);
export const portBase = Number(opts['port-base']);
if (
  sizes.some(({ n }) => !Number.isInteger(n) || n < 2 || n > 1000) ||
  concurrencies.some((c) => c !== 'default' && (!Number.isInteger(c) || c < 1)) ||
  !Number.isInteger(runs) ||
  runs < 1 ||
  !Number.isInteger(runsLimited) ||
  runsLimited < 1 ||
  !Number.isInteger(portBase) ||
  !(parseDuration(opts.interval)! > 0)
) {
  console.error(
    'usage: node --import tsx bench/convergence.bench.ts [--sizes 3x3,20,50] [--concurrency 64,default] [--runs 3] [--runs-limited 1] [--seed 1] [--port-base 31000] [--profile DIR] [--interval 50ms]',
  );
  process.exit(2);
}
export const CHECK_INTERVAL = opts.interval;
export const effective = (c: Concurrency): number => (c === 'default' ? cores : c);
export const label = (c: Concurrency): string => (c === 'default' ? `${cores} (default)` : String(c));
