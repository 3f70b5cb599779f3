// The convergence bench's graphs (chains with one slow start, seeded layered DAGs), a stand-in's own boot time, and the
// scheduler simulated with zero overhead.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { parseDuration } from '../../dist/core/duration.js';
import { nextSteps, type StartStatus } from '../../dist/core/schedule.js';
import { modelRepo, mulberry32 } from '../generate-repo.js';
import { assertPortsFree } from '../lib/ports.js';
import type { ProcessComponent } from '../lib/process-repo.js';
import { readStandInLog } from '../lib/stand-in.js';
import { median } from '../lib/stats.js';
import { CHECK_INTERVAL, portBase, seed } from './options.js';

export const SLOW_MS = 1500;
export const FAST_MS = 200;

/** `chains` independent chains of `length`; chain i has its slow start at position i mod length. */
export function makeChains(chains: number, length: number): ProcessComponent[] {
  const out: ProcessComponent[] = [];
  for (let i = 0; i < chains; i++)
    for (let k = 0; k < length; k++) {
      const index = i * length + k;
      out.push({
        name: `ch${i}-${k}`,
        port: portBase + index,
        delay: k === i % length ? SLOW_MS : FAST_MS,
        check: index % 2 ? ('http' as const) : ('tcp' as const),
        interval: CHECK_INTERVAL,
        timeout: '1s',
        threshold: Math.ceil(10_000 / (parseDuration(CHECK_INTERVAL) ?? 50)),
        dependencies: k ? [{ on: `ch${i}-${k - 1}`, type: k % 2 ? 'hard' : 'ordering' }] : [],
      });
    }
  return out;
}

/** A stand-in's own start time, alone: spawn → its `listening` stamp with --delay 0 (median of `times`). */
export async function soloBootMs(standIn: string, port: number, times = 7): Promise<number> {
  const runs: number[] = [];
  for (let k = 0; k < times; k++) {
    await assertPortsFree([port]);
    const t0 = performance.timeOrigin + performance.now();
    const child = spawn(process.execPath, [standIn, '--port', String(port), '--delay', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const listening = await new Promise<number>((resolve, reject) => {
      let text = '';
      child.stdout.on('data', (d) => {
        text += d;
        const at = readStandInLog(text).get(child.pid!)?.listening;
        if (at !== undefined) resolve(at);
      });
      child.once('exit', () => reject(new Error('the stand-in exited before it listened')));
    });
    runs.push(listening - t0);
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  }
  return median(runs);
}

/** The DAG of generate-repo.ts's model, with seeded start delays and check kinds from a stream of their own. */
export function makeGraph(n: number): ProcessComponent[] {
  const model = modelRepo({ n, seed });
  const rand = mulberry32((seed * 7919 + n) >>> 0);
  const name = (i: number) => `c${String(i).padStart(2, '0')}`;
  return model.components.map((c) => ({
    name: name(c.index),
    port: portBase + c.index,
    delay: 100 + Math.floor(rand() * 1401), // 100–1500 ms
    check: rand() < 0.5 ? ('http' as const) : ('tcp' as const),
    interval: CHECK_INTERVAL,
    timeout: '1s',
    threshold: Math.ceil(10_000 / (parseDuration(CHECK_INTERVAL) ?? 50)), // a 10 s start budget: far above the slowest start, so no start fails on a busy machine
    dependencies: c.dependencies.map((d) => ({ on: name(d.on), type: d.type })),
  }));
}

/** The agent's scheduler with zero overhead: every component takes exactly its delay, `concurrency` at a time. */
export function simulateEager(
  startOrder: readonly string[],
  dependencies: ReadonlyMap<string, readonly string[]>,
  duration: (name: string) => number,
  concurrency: number,
): number {
  const status = new Map<string, StartStatus>(startOrder.map((n) => [n, 'waiting']));
  const ends = new Map<string, number>();
  let t = 0;
  for (;;) {
    const step = nextSteps({ startOrder, dependencies, satisfiedOutside: new Set() }, status, concurrency);
    for (const n of step.start) {
      status.set(n, 'starting');
      ends.set(n, t + duration(n));
    }
    if (ends.size === 0) return t;
    t = Math.min(...ends.values());
    for (const [n, e] of [...ends])
      if (e === t) {
        ends.delete(n);
        status.set(n, 'healthy');
      }
  }
}
