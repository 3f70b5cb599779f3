// One fresh agent run of the convergence bench: its log and the programs' stamps, and what they say (the wall time, the
// per-component overhead and its parts, the chain that finished last, the references over the measured durations).
import { join } from 'node:path';
import type { DesiredState } from '../../dist/core/desired-state-types.js';
import { criticalPath, layeredMakespan } from '../../dist/core/schedule.js';
import { assertPortsFree } from '../lib/ports.js';
import type { ProcessComponent } from '../lib/process-repo.js';
import { killStragglers } from '../lib/processes.js';
import { readStandInLog, readTextIfAny } from '../lib/stand-in.js';
import { startAgent } from '../lib/start-agent.js';
import { mean, median, quantile, round } from '../lib/stats.js';
import { simulateEager } from './graphs.js';
import { effective, opts, START_TIMEOUT_MS, type Concurrency } from './options.js';

/** When a component went through each state (the agent's log), and its program's own stamps. */
interface Stamps {
  installing: number | undefined;
  starting: number | undefined;
  running: number | undefined;
  origin: number | undefined;
  started: number | undefined;
  listening: number | undefined;
  starts: number;
}

/** What one run says; a failed run has only the first fields. */
export interface RunResult {
  concurrency: number;
  failure: string | undefined;
  stragglers: number;
  wallMs: number;
  firstInstallMs: number;
  overheadMs?: { mean: number | null; p50: number | null; p90: number | null; max: number | null };
  partsMeanMs?: Record<string, number | null>;
  chain?: string[];
  chainMs?: Record<string, number | null>;
  measuredCriticalPathMs?: number | null;
  measuredLayeredMs?: number | null;
  measuredSimEagerMs?: number | null;
  restartsDuringStart?: string[];
}

/** One fresh agent run: the log, the program stamps, and what they say. */
export async function runOnce({
  repo,
  plan,
  graph,
  desired,
  concurrency,
  work,
  k,
}: {
  repo: string;
  plan: string;
  graph: ProcessComponent[];
  desired: DesiredState;
  concurrency: Concurrency;
  work: string;
  k: number;
}): Promise<RunResult> {
  const stateDir = join(work, `state-${graph.length}-${concurrency}-${k}`);
  await assertPortsFree(graph.map((c) => c.port));
  const nodeArgs = opts.profile
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${opts.profile}`,
        `--cpu-prof-name=agent-${graph.length}-${concurrency}-${k}.cpuprofile`,
      ]
    : [];
  const agent = startAgent({
    repo,
    plan,
    stateDir,
    concurrency: concurrency === 'default' ? undefined : concurrency,
    nodeArgs,
    extraArgs: ['--listen', '127.0.0.1:0'],
  }); // the API on, as by default, on a free port
  let failure: string | undefined;
  try {
    await agent.waitFor(
      (e) => e.msg === 'all components running' || e.msg?.startsWith?.('apply failed') || e.msg === 'apply finished',
      START_TIMEOUT_MS,
      '"all components running"',
    );
  } catch (e) {
    failure = (e as Error).message;
  }
  await agent.stop();
  const stragglers = await killStragglers(agent.componentPids(), work);

  const ev = agent.events;
  const plan0 = ev.find((e) => e.msg === 'reconcile plan');
  const done = ev.find((e) => e.msg === 'all components running');
  const failedLine = ev.find((e) => e.msg?.startsWith?.('apply failed') || e.msg === 'apply finished');
  if (!failure && !done) failure = failedLine?.msg ?? 'the apply did not finish';
  const concurrencyLogged = ev.find((e) => e.msg === 'agent started')?.concurrency;

  const delay = new Map(graph.map((c) => [c.name, c.delay]));
  const deps = new Map(
    desired.startOrder.map((n) => [
      n,
      desired.components.find((c) => c.name === n)!.dependencies.map((d) => d.component),
    ]),
  );
  const first = (name: string, state: string) => ev.find((e) => e.component === name && e.state === state);
  const per = new Map<string, Stamps>();
  for (const c of graph) {
    const starting = first(c.name, 'starting');
    const stamps = readStandInLog(readTextIfAny(join(stateDir, 'components', c.name, 'logs', 'stdout.log')));
    const prog = starting ? stamps.get(starting.pid!) : undefined;
    per.set(c.name, {
      installing: first(c.name, 'installing')?.t,
      starting: starting?.t,
      running: first(c.name, 'running')?.t,
      origin: prog?.origin,
      started: prog?.started,
      listening: prog?.listening,
      starts: ev.filter((e) => e.component === c.name && e.state === 'starting').length,
    });
  }
  const out: RunResult = {
    concurrency: concurrencyLogged ?? effective(concurrency),
    failure,
    stragglers,
    wallMs: done && plan0 ? done.t - plan0.t : NaN,
    firstInstallMs: plan0 ? Math.min(...[...per.values()].map((p) => p.installing ?? Infinity)) - plan0.t : NaN,
  };
  if (failure) return out;

  // Per-component overhead: (starting → running) − its own delay; and its parts.
  const overhead: number[] = [];
  const parts: Record<'dispatch' | 'prepare' | 'boot' | 'delayLate' | 'detect', number[]> = {
    dispatch: [],
    prepare: [],
    boot: [],
    delayLate: [],
    detect: [],
  };
  // Every component ran (no failure): each has its stamps, every one a number.
  const at = (name: string) => per.get(name) as Record<keyof Stamps, number>;
  const readyAt = (name: string) => Math.max(plan0!.t, ...deps.get(name)!.map((d) => at(d).running));
  for (const c of graph) {
    const p = at(c.name);
    overhead.push(p.running - p.starting - c.delay);
    parts.dispatch.push(p.installing - readyAt(c.name));
    parts.prepare.push(p.origin - p.installing);
    parts.boot.push(p.started - p.origin);
    parts.delayLate.push(p.listening - p.started - c.delay);
    parts.detect.push(p.running - p.listening);
  }
  // The chain that finished last, walked back through the dependency that became healthy last.
  const chain: string[] = [];
  let cur: string | undefined = [...per.entries()].sort((a, b) => b[1].running! - a[1].running!)[0]![0];
  while (cur) {
    chain.unshift(cur);
    const ds: string[] = deps.get(cur)!;
    cur = ds.length ? ds.reduce((a, b) => (at(a).running >= at(b).running ? a : b)) : undefined;
  }
  const along: Record<string, number> = { dispatch: 0, prepare: 0, boot: 0, delay: 0, delayLate: 0, detect: 0 };
  for (const n of chain) {
    const p = at(n);
    along.dispatch! += p.installing - readyAt(n);
    along.prepare! += p.origin - p.installing;
    along.boot! += p.started - p.origin;
    along.delay! += delay.get(n)!;
    along.delayLate! += p.listening - p.started - delay.get(n)!;
    along.detect! += p.running - p.listening;
  }
  along.finish = done!.t - at(chain[chain.length - 1]!).running;
  // The critical path again, with each component's measured installing → running instead of its delay:
  // what the wall time would be if the scheduler dispatched at once with unlimited concurrency.
  const measured = (n: string) => at(n).running - at(n).installing;
  const measuredCp = criticalPath(desired.startOrder, deps, measured);
  return {
    ...out,
    overheadMs: {
      mean: round(mean(overhead)),
      p50: round(median(overhead)),
      p90: round(quantile(overhead, 0.9)),
      max: round(Math.max(...overhead)),
    },
    partsMeanMs: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, round(mean(v))])),
    chain,
    chainMs: Object.fromEntries(Object.entries(along).map(([k, v]) => [k, round(v)])),
    measuredCriticalPathMs: round(measuredCp),
    measuredLayeredMs: round(layeredMakespan(desired.layers, measured)),
    measuredSimEagerMs: round(simulateEager(desired.startOrder, deps, measured, out.concurrency)),
    restartsDuringStart: graph.filter((c) => at(c.name).starts > 1).map((c) => c.name),
  };
}
