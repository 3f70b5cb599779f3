// What the footprint bench samples: RSS and CPU over a window, Node's floor, a Git server for the agent to follow, and
// the cold start of keystonectl status beside `node -e 0`.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { BENCH_GIT_ENV } from '../lib/git-http-backend.js';
import { projectDir } from '../lib/paths.js';
import { cleanEnv, clockTicksPerSecond, procStat, rssKiB, signalPid } from '../lib/processes.js';
import { median, sleep } from '../lib/stats.js';
import { BUNDLE, COLD_RUNS, IDLE_S, LAUNCH_ENV, LAUNCHERS, SETTLE_S, START_SAMPLES } from './options.js';

/** The agent's KEYSTONE_MEMORY_PHASES=1 line of a phase, MiB. */
export interface Phase {
  phase: string;
  rss_mib: number;
  heap_used_mib: number;
  heap_total_mib: number;
  external_mib: number;
}
export interface ColdStatus {
  statusMs: number;
  nodeMs: number;
  statusRunsMs: number[];
  nodeRunsMs: number[];
}
/** A row of the table and of the results file (a failed one has only its key, label and error). */
export interface Row {
  key: string;
  label: string;
  nodeArgs?: string | string[];
  env?: Record<string, string>;
  rssKiBAtStart?: number;
  rssKiB?: number;
  rssKiBMin?: number;
  rssKiBMax?: number;
  idleCpuPercent?: number;
  phases?: Phase[];
  cold?: ColdStatus;
  error?: string;
}
export interface AgentPlan {
  key: string;
  label: string;
  git: boolean;
  api: boolean;
  nodeArgs: string[];
  env?: Record<string, string>;
  launcher?: boolean;
  cold?: boolean;
}

/** One RSS sample a second for `seconds`: the samples, and the CPU the process used over them (% of one core). */
export async function sampleRss(pid: number, seconds: number): Promise<{ samples: number[]; cpu: number }> {
  const samples: number[] = [];
  const ticks0 = procStat(pid)?.ticks ?? 0;
  const t0 = performance.now();
  for (let i = 0; i < seconds; i++) {
    await sleep(1000);
    const r = rssKiB(pid);
    if (r !== undefined) samples.push(r);
  }
  const cpu =
    (((procStat(pid)?.ticks ?? 0) - ticks0) / clockTicksPerSecond() / ((performance.now() - t0) / 1000)) * 100;
  return { samples, cpu: +cpu.toFixed(2) };
}

/** At start (its first seconds), then settled (the idle window after --settle s), as the rows report them. */
export async function footprint(pid: number) {
  const start = await sampleRss(pid, START_SAMPLES);
  if (SETTLE_S > START_SAMPLES) await sleep((SETTLE_S - START_SAMPLES) * 1000);
  const idle = await sampleRss(pid, IDLE_S);
  return {
    rssKiBAtStart: median(start.samples),
    rssKiB: median(idle.samples),
    rssKiBMin: Math.min(...idle.samples),
    rssKiBMax: Math.max(...idle.samples),
    idleCpuPercent: idle.cpu,
  };
}

export async function measureFloor(): Promise<Row> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { env: cleanEnv(), stdio: 'ignore' });
  try {
    await sleep(500);
    const { samples, cpu } = await sampleRss(child.pid!, IDLE_S);
    return {
      key: 'floor',
      label: 'node floor (empty node -e, kept alive)',
      rssKiB: median(samples),
      rssKiBMin: Math.min(...samples),
      rssKiBMax: Math.max(...samples),
      idleCpuPercent: cpu,
    };
  } finally {
    signalPid(child.pid!, 'SIGKILL');
  }
}

/** A bare repository of the process repo (one commit) under `root`, served over smart HTTP by a child process. */
export async function gitServer(work: string, repo: string): Promise<{ url: string; stop: () => boolean }> {
  const root = join(work, 'served');
  const git = (cwd: string, ...args: string[]) => {
    const r = spawnSync('git', args, { cwd, env: BENCH_GIT_ENV, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  };
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'footprint bench');
  git(work, 'clone', '-q', '--bare', repo, join(root, 'fleet.git'));
  const child = spawn(process.execPath, [join(projectDir, 'dist', 'dev', 'serve-git.js'), root, '--port', '0'], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('the Git server did not start')), 10_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', () => reject(new Error('the Git server exited')));
  });
  return { url: `http://127.0.0.1:${port}/fleet.git`, stop: () => signalPid(child.pid!, 'SIGTERM') };
}

/** Wall ms from spawn to exit of `command args`, which must exit 0. */
export function wallMs(command: string, args: string[], env: NodeJS.ProcessEnv): number {
  const t0 = performance.now();
  const r = spawnSync(command, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${[command, ...args].join(' ')} exited ${r.status}: ${r.stderr.slice(-500)}`);
  return ms;
}

/** `keystonectl status` through its launcher against `agentUrl`, `node -e 0` taking turns with it: median wall ms. */
export function coldStatus(agentUrl: string, stateDir: string): ColdStatus {
  const env = cleanEnv(LAUNCH_ENV);
  const ctl: [string, string[]] = BUNDLE
    ? ['/bin/sh', [join(LAUNCHERS, 'keystonectl')]]
    : [process.execPath, [join(projectDir, 'bin', 'keystonectl.js')]];
  const status: number[] = [];
  const floor: number[] = [];
  wallMs(ctl[0], [...ctl[1], 'status', '--agent', agentUrl, '--state-dir', stateDir], env); // the page cache warm, as on a device
  for (let i = 0; i < COLD_RUNS; i++) {
    floor.push(wallMs(process.execPath, ['-e', '0'], cleanEnv()));
    status.push(wallMs(ctl[0], [...ctl[1], 'status', '--agent', agentUrl, '--state-dir', stateDir], env));
  }
  return {
    statusMs: +median(status).toFixed(1),
    nodeMs: +median(floor).toFixed(1),
    statusRunsMs: status.map((x) => +x.toFixed(1)),
    nodeRunsMs: floor.map((x) => +x.toFixed(1)),
  };
}
