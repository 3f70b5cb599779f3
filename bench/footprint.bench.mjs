// Footprint (issue 16): the agent's resident memory with 50 supervised programs, in the two ways a device runs it,
// beside Node's own floor measured in the same run. Run by hand (`npm run bench -- footprint`, which builds first);
// it asserts nothing, it reports. Aim: ≤ 55 MiB (below PM2's daemon; the floor is ~41 MiB).
//
// Rows (each alone on the machine, one after the other):
//   node floor        an empty `node -e` process kept alive (a timer): what any Node program costs before its code.
//   directory         `keystone agent --dir` over the 50 programs of the supervision bench (stand-ins, no health
//                     check), the API on (--listen 127.0.0.1:0: the default 127.0.0.1:8080 but on a free port).
//   directory, no API the same with --listen none.
//   git + API         `keystone agent --repo http://…/fleet.git` following a bare repository served by `git http-backend`
//                     (src/dev/serve-git.ts, in a process of its own), --poll 10s, Git notes reported to it (the
//                     default --status), the API on.
//   … V8 defaults     the same two agents with KEYSTONE_V8_DEFAULTS=1: V8's own young generation (semi-spaces growing to
//                     16 MiB), without the --semi-space-growth-factor=1 the agent sets for itself (src/cli/keystone.ts).
//   … --node-args     (only with --node-args, e.g. "--max-semi-space-size=1"): the two agents with those node flags.
// Memory: VmRSS (/proc/PID/status), the median of one sample a second over the idle window (--idle s) once every
// program runs, as supervision.bench.mjs measures it; idle CPU: utime + stime over that window, % of one core. The agent runs with KEYSTONE_MEMORY_PHASES=1: its per-phase
// process.memoryUsage() lines (modules loaded, agent started, API started, source started) go to the JSON.
// PM2's daemon and supervisord, when bench/results/supervision.json has them, are printed beside (from that run).
//
// Options: --programs 50  --idle 20 (seconds)  --only floor,dir,dir-noapi,git,dir-v8,git-v8  --port-base 26000 (below the
//          ephemeral range, so that no outgoing connection takes a program's port)  --node-args ""
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import {
  assertPortsFree,
  BENCH_GIT_ENV,
  benchDir,
  cleanEnv,
  cleanUpOnSignal,
  clockTicksPerSecond,
  ensureDir,
  fmt,
  killStragglers,
  machine,
  median,
  procStat,
  projectDir,
  rssKiB,
  signalPid,
  sleep,
  startAgent,
  writeProcessRepo,
  writeStandIn,
} from './harness.mjs';

const ALL = ['floor', 'dir', 'dir-noapi', 'git', 'dir-v8', 'git-v8', 'dir-args', 'git-args'];
const { values: opts } = parseArgs({
  options: {
    programs: { type: 'string', default: '50' },
    idle: { type: 'string', default: '20' },
    only: { type: 'string', default: 'floor,dir,dir-noapi,git,dir-v8,git-v8' },
    'port-base': { type: 'string', default: '26000' },
    'node-args': { type: 'string', default: '' },
  },
});
const N = Number(opts.programs);
const IDLE_S = Number(opts.idle);
const PORT_BASE = Number(opts['port-base']);
const only = opts.only.split(',').map((s) => s.trim());
const NODE_ARGS = opts['node-args'].split(' ').filter(Boolean);
if (NODE_ARGS.length && !only.includes('dir-args')) only.push('dir-args', 'git-args');
if (!Number.isInteger(N) || N < 1 || !Number.isInteger(IDLE_S) || IDLE_S < 1 || !Number.isFinite(PORT_BASE) || only.some((s) => !ALL.includes(s))) {
  console.error(`usage: node bench/footprint.bench.mjs [--programs 50] [--idle 20] [--only ${ALL.join(',')}] [--port-base 26000] [--node-args "--max-semi-space-size=1"]`);
  process.exit(2);
}
const AIM_MIB = 55;
const MiB = (kib) => kib / 1024;
const resultsFile = join(benchDir, 'results', 'footprint.json');
const names = Array.from({ length: N }, (_, i) => `p${String(i).padStart(2, '0')}`);
const ports = names.map((_, i) => PORT_BASE + i);

async function idleRss(pid) {
  const samples = [];
  const ticks0 = procStat(pid)?.ticks ?? 0;
  const t0 = performance.now();
  for (let i = 0; i < IDLE_S; i++) {
    await sleep(1000);
    const r = rssKiB(pid);
    if (r !== undefined) samples.push(r);
  }
  const cpu = (((procStat(pid)?.ticks ?? 0) - ticks0) / clockTicksPerSecond() / ((performance.now() - t0) / 1000)) * 100;
  return { rssKiB: median(samples), rssKiBMin: Math.min(...samples), rssKiBMax: Math.max(...samples), idleCpuPercent: +cpu.toFixed(2) };
}

async function measureFloor() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { env: cleanEnv(), stdio: 'ignore' });
  try {
    await sleep(500);
    return { key: 'floor', label: 'node floor (empty node -e, kept alive)', ...(await idleRss(child.pid)) };
  } finally {
    signalPid(child.pid, 'SIGKILL');
  }
}

/** A bare repository of the process repo (one commit) under `root`, served over smart HTTP by a child process. */
async function gitServer(work, repo) {
  const root = join(work, 'served');
  const git = (cwd, ...args) => {
    const r = spawnSync('git', args, { cwd, env: BENCH_GIT_ENV, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  };
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'footprint bench');
  git(work, 'clone', '-q', '--bare', repo, join(root, 'fleet.git'));
  const child = spawn(process.execPath, [join(projectDir, 'dist', 'dev', 'serve-git.js'), root, '--port', '0'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
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
  return { url: `http://127.0.0.1:${port}/fleet.git`, stop: () => signalPid(child.pid, 'SIGTERM') };
}

async function measureAgent(work, standIn, { key, label, git, api, nodeArgs, env = {} }) {
  await assertPortsFree(ports);
  const dir = join(work, key);
  const repo = join(dir, 'repo');
  const plan = writeProcessRepo(repo, names.map((name, i) => ({ name, port: ports[i], delay: 0, dependencies: [] })), standIn);
  const server = git ? await gitServer(dir, repo) : undefined;
  const agent = startAgent({
    repo,
    ...(server && { gitRepo: server.url }),
    plan,
    stateDir: join(dir, 'state'),
    concurrency: 64,
    env: cleanEnv({ KEYSTONE_MEMORY_PHASES: '1', ...env }),
    nodeArgs,
    extraArgs: ['--listen', api ? '127.0.0.1:0' : 'none', ...(git ? ['--poll', '10s'] : [])],
  });
  process.stderr.write(`${label}: starting ${N} programs… `);
  try {
    await agent.waitFor((e) => e.msg === 'all components running' || e.msg?.startsWith('apply failed'), 120_000, '"all components running"');
    if (!agent.events.some((e) => e.msg === 'all components running')) throw new Error('the agent did not bring every program up');
    const upRss = rssKiB(agent.pid);
    process.stderr.write(`up; idle ${IDLE_S} s… `);
    const idle = await idleRss(agent.pid);
    process.stderr.write(`${fmt(MiB(idle.rssKiB), 1)} MiB\n`);
    const phases = agent.events.filter((e) => e.msg === 'memory').map(({ phase, rss_mib, heap_used_mib, heap_total_mib, external_mib }) => ({ phase, rss_mib, heap_used_mib, heap_total_mib, external_mib }));
    return { key, label, nodeArgs, env, rssKiBWhenUp: upRss, ...idle, phases };
  } finally {
    await agent.stop();
    server?.stop();
    await killStragglers([agent.pid, ...agent.componentPids()], dir);
  }
}

const started = performance.now();
const work = mkdtempSync(join(tmpdir(), 'keystone-footprint-'));
chmodSync(work, 0o755);
cleanUpOnSignal(work, () => rmSync(work, { recursive: true, force: true }));
try {
  const standIn = writeStandIn(join(work, 'bin'));
  const extra = NODE_ARGS.join(' ');
  const V8_DEFAULTS = { KEYSTONE_V8_DEFAULTS: '1' };
  const plans = [
    { key: 'dir', label: 'keystone --dir, API on', git: false, api: true, nodeArgs: [] },
    { key: 'dir-noapi', label: 'keystone --dir, --listen none', git: false, api: false, nodeArgs: [] },
    { key: 'git', label: 'keystone --repo (Git), API on', git: true, api: true, nodeArgs: [] },
    { key: 'dir-v8', label: 'keystone --dir, API on, V8 defaults', git: false, api: true, nodeArgs: [], env: V8_DEFAULTS },
    { key: 'git-v8', label: 'keystone --repo (Git), API on, V8 defaults', git: true, api: true, nodeArgs: [], env: V8_DEFAULTS },
    { key: 'dir-args', label: `keystone --dir, API on, node ${extra}`, git: false, api: true, nodeArgs: NODE_ARGS },
    { key: 'git-args', label: `keystone --repo (Git), API on, node ${extra}`, git: true, api: true, nodeArgs: NODE_ARGS },
  ];
  const rows = [];
  if (only.includes('floor')) rows.push(await measureFloor());
  for (const p of plans) {
    if (!only.includes(p.key)) continue;
    try {
      rows.push(await measureAgent(work, standIn, p));
    } catch (e) {
      process.stderr.write(`failed: ${e.message}\n`);
      rows.push({ key: p.key, label: p.label, error: e.message });
    }
  }
  // PM2's and supervisord's daemons, from the last supervision bench on this machine (if any).
  let others = [];
  const sup = join(benchDir, 'results', 'supervision.json');
  if (existsSync(sup)) {
    const s = JSON.parse(readFileSync(sup, 'utf8'));
    others = (s.rows ?? []).filter((r) => r.key === 'pm2' || r.key === 'supervisord').map((r) => ({ key: r.key, label: `${r.label} ${r.version} (supervision.json, ${s.date.slice(0, 10)})`, rssKiB: r.rssKiB }));
  }
  const floor = rows.find((r) => r.key === 'floor');
  console.log(`\nfootprint benchmark — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}; ${N} programs, RSS median over ${IDLE_S} s idle`);
  console.log('');
  console.log(`  ${'process'.padEnd(58)} ${'RSS MiB'.padStart(8)} ${'min'.padStart(7)} ${'max'.padStart(7)} ${'over floor'.padStart(11)} ${'idle CPU'.padStart(9)}  aim ≤ ${AIM_MIB}`);
  for (const r of [...rows, ...others]) {
    if (r.error) {
      console.log(`  ${r.label.padEnd(58)} failed: ${r.error}`);
      continue;
    }
    const over = floor && r !== floor ? `+${fmt(MiB(r.rssKiB - floor.rssKiB), 1)}` : '';
    const aim = r.key.startsWith('dir') || r.key.startsWith('git') ? (MiB(r.rssKiB) <= AIM_MIB ? 'met' : 'not met') : '';
    console.log(`  ${r.label.padEnd(58)} ${fmt(MiB(r.rssKiB), 1).padStart(8)} ${r.rssKiBMin !== undefined ? fmt(MiB(r.rssKiBMin), 1).padStart(7) : ''.padStart(7)} ${r.rssKiBMax !== undefined ? fmt(MiB(r.rssKiBMax), 1).padStart(7) : ''.padStart(7)} ${over.padStart(11)} ${(r.idleCpuPercent !== undefined ? `${fmt(r.idleCpuPercent, 2)} %` : '').padStart(9)}  ${aim}`);
  }
  if (!others.some((o) => o.key === 'pm2')) console.log('  (PM2: not in bench/results/supervision.json; `npm run bench -- supervision` measures it)');
  const phased = rows.filter((r) => r.phases?.length);
  if (phased.length) {
    console.log('\n  the agent\'s own phases (process.memoryUsage(), MiB: rss / heap used / heap total / external)');
    for (const r of phased) console.log(`  ${r.label.padEnd(58)} ${r.phases.map((p) => `${p.phase}: ${p.rss_mib}/${p.heap_used_mib}/${p.heap_total_mib}/${p.external_mib}`).join('; ')}`);
  }
  ensureDir(join(benchDir, 'results'));
  writeFileSync(
    resultsFile,
    JSON.stringify(
      {
        bench: 'footprint',
        date: new Date().toISOString(),
        ...machine(),
        programs: N,
        idleSeconds: IDLE_S,
        aimMiB: AIM_MIB,
        measures: {
          rssKiB: 'VmRSS: the median of one sample a second over the idle window, once every program runs',
          idleCpuPercent: 'utime + stime of the process over the idle window, % of one core',
          phases: "the agent's KEYSTONE_MEMORY_PHASES=1 lines: process.memoryUsage() in MiB at each start-up phase",
        },
        rows,
        fromSupervisionBench: others,
        benchSeconds: +((performance.now() - started) / 1000).toFixed(1),
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`\nwrote ${resultsFile}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
