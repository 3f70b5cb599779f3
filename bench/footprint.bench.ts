// Footprint (issues 16 and 31): the agent's resident memory with 50 supervised programs, run as the Debian package
// runs it (the bundle, packaging/bundle.mjs, made here from dist/, started through packaging/launchers/keystone at its
// default flags), beside Node's own floor measured in the same run; and the cold start of `keystonectl status`
// through its launcher beside `node -e 0`. Run by hand (`npm run bench -- footprint`, which builds first); it asserts
// nothing, it reports. Aims: ≤ 55 MiB with 50 services in directory mode (API on), ≤ 65 MiB following Git (PM2's daemon
// holds ~59 MiB, Node's floor ~38 MiB); keystonectl status ≤ 150 ms.
//
// Rows (each alone on the machine, one after the other):
//   node floor        an empty `node -e` process kept alive (a timer): what any Node program costs before its code.
//   directory         `keystone agent --dir` over the 50 programs of the supervision bench (stand-ins, no health
//                     check), the API on (--listen 127.0.0.1:0: the default 127.0.0.1:8080 but on a free port).
//   directory, no API the same with --listen none.
//   git + API         `keystone agent --repo http://…/fleet.git` following a bare repository served by `git http-backend`
//                     (src/dev/serve-git.ts, in a process of its own), --poll 10s, Git notes reported to it (the
//                     default --status), the API on.
//   … V8 defaults     the same two agents with none of the launcher's flags (node run on the bundle directly) and
//                     KEYSTONE_V8_DEFAULTS=1: what the launcher's flags save.
//   … --node-args     (only with --node-args, e.g. --node-args=--max-semi-space-size=1): the two agents with node run on the bundle directly
//                     with exactly those flags, in place of the launcher's.
//   keystonectl status  the bundle's keystonectl through its launcher against the directory agent above (after its
//                     measure), the median wall time of --cold runs from spawn to exit, beside `node -e 0` taking turns.
// Memory: VmRSS (/proc/PID/status), one sample a second. "at start" is the median of the first 5 s once every program
// runs; then the agent is left --settle seconds (V8's memory reducer returns the garbage of the start ~15 s after it:
// the agent's lasting size is what a device holds); "RSS" is the median over the --idle window after that, with its min
// and max. Idle CPU: utime + stime over the idle window, % of one core. The agent runs with KEYSTONE_MEMORY_PHASES=1:
// its per-phase process.memoryUsage() lines (modules loaded, agent started, API started, source started) go to the
// JSON. PM2's daemon and supervisord, when bench/results/supervision.json has them, are printed beside (from that run).
// `--build dist` runs dist/ through bin/keystone.js (node at its defaults) instead of the bundle.
//
// Options: --programs 50  --idle 20 (seconds)  --settle 20 (seconds)  --cold 10 (keystonectl runs, 0: none)
//          --only floor,dir,dir-noapi,git,dir-v8,git-v8  --port-base 26000 (below the ephemeral range, so that no
//          outgoing connection takes a program's port)  --node-args ""  --build bundle|dist
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { bundle } from '../packaging/bundle.mjs';
import { hostArch } from '../packaging/deb-arch.mjs';
import { sqliteAddon } from '../packaging/sqlite-addon-build.mjs';
import {
  AIM_COLD_MS,
  AIM_DIR_MIB,
  AIM_GIT_MIB,
  aimOf,
  BUNDLE,
  COLD_RUNS,
  IDLE_S,
  LAUNCH_ENV,
  LAUNCHERS,
  MiB,
  N,
  names,
  NODE_ARGS,
  only,
  opts,
  ports,
  resultsFile,
  SETTLE_S,
  START_SAMPLES,
} from './footprint/options.js';
import {
  coldStatus,
  footprint,
  gitServer,
  measureFloor,
  type AgentPlan,
  type Phase,
  type Row,
} from './footprint/samples.js';
import { machine } from './lib/machine.js';
import { benchDir, ensureDir, projectDir } from './lib/paths.js';
import { assertPortsFree } from './lib/ports.js';
import { writeProcessRepo } from './lib/process-repo.js';
import { cleanEnv, cleanUpOnSignal, killStragglers } from './lib/processes.js';
import { writeStandIn } from './lib/stand-in.js';
import { startAgent } from './lib/start-agent.js';
import { fmt } from './lib/stats.js';

// The package's addon (its lean SQLite, packaging/sqlite-addon-build.mjs: compiled here for this Node's ABI once, then
// cached: g++ and Node's headers from the npm registry), as the Debian package runs it; node_modules' own build only
// where the package has none for this Node's ABI.
const runtime = JSON.parse(readFileSync(join(projectDir, 'packaging', 'node-runtime.json'), 'utf8'));
const abi = process.versions.modules;
const addon =
  BUNDLE && runtime.abis[abi] ? sqliteAddon(hostArch(), abi, runtime, (line) => console.log(line)) : undefined;
if (BUNDLE) await bundle({ out: BUNDLE, addon });

async function measureAgent(
  work: string,
  standIn: string,
  { key, label, git, api, nodeArgs, env = {}, launcher = true, cold = false }: AgentPlan,
): Promise<Row> {
  await assertPortsFree(ports);
  const dir = join(work, key);
  const repo = join(dir, 'repo');
  const stateDir = join(dir, 'state');
  const plan = writeProcessRepo(
    repo,
    names.map((name, i) => ({ name, port: ports[i]!, delay: 0, dependencies: [] })),
    standIn,
  );
  const server = git ? await gitServer(dir, repo) : undefined;
  const agent = startAgent({
    repo,
    ...(server && { gitRepo: server.url }),
    plan,
    stateDir,
    concurrency: 64,
    env: cleanEnv({ KEYSTONE_MEMORY_PHASES: '1', ...(launcher && LAUNCH_ENV), ...env }),
    nodeArgs,
    ...(BUNDLE && (launcher ? { launcher: join(LAUNCHERS, 'keystone') } : { program: join(BUNDLE, 'keystone.mjs') })),
    extraArgs: ['--listen', api ? '127.0.0.1:0' : 'none', ...(git ? ['--poll', '10s'] : [])],
  });
  process.stderr.write(`${label}: starting ${N} programs… `);
  try {
    await agent.waitFor(
      (e) => e.msg === 'all components running' || e.msg?.startsWith('apply failed'),
      120_000,
      '"all components running"',
    );
    if (!agent.events.some((e) => e.msg === 'all components running'))
      throw new Error('the agent did not bring every program up');
    process.stderr.write(`up; ${SETTLE_S} s to settle, ${IDLE_S} s idle… `);
    const measured = await footprint(agent.pid);
    process.stderr.write(`${fmt(MiB(measured.rssKiB), 1)} MiB\n`);
    const phases: Phase[] = agent.events
      .filter((e) => e.msg === 'memory')
      .map(({ phase, rss_mib, heap_used_mib, heap_total_mib, external_mib }) => ({
        phase,
        rss_mib,
        heap_used_mib,
        heap_total_mib,
        external_mib,
      }));
    const row: Row = { key, label, nodeArgs: launcher ? "the launcher's" : nodeArgs, env, ...measured, phases };
    if (cold && COLD_RUNS > 0) {
      const url = agent.events
        .find((e) => e.msg === 'HTTP API listening')
        ?.addresses?.find((a: string) => a.startsWith('http://')) as string | undefined;
      if (!url) throw new Error('the agent logged no API address');
      process.stderr.write(`keystonectl status, ${COLD_RUNS} cold starts… `);
      row.cold = coldStatus(url, stateDir);
      process.stderr.write(`${fmt(row.cold.statusMs, 1)} ms\n`);
    }
    return row;
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
  const plans: AgentPlan[] = [
    { key: 'dir', label: 'keystone --dir, API on', git: false, api: true, nodeArgs: [], cold: true },
    { key: 'dir-noapi', label: 'keystone --dir, --listen none', git: false, api: false, nodeArgs: [] },
    { key: 'git', label: 'keystone --repo (Git), API on', git: true, api: true, nodeArgs: [] },
    {
      key: 'dir-v8',
      label: 'keystone --dir, API on, V8 defaults',
      git: false,
      api: true,
      nodeArgs: [],
      env: V8_DEFAULTS,
      launcher: false,
    },
    {
      key: 'git-v8',
      label: 'keystone --repo (Git), API on, V8 defaults',
      git: true,
      api: true,
      nodeArgs: [],
      env: V8_DEFAULTS,
      launcher: false,
    },
    {
      key: 'dir-args',
      label: `keystone --dir, API on, node ${extra}`,
      git: false,
      api: true,
      nodeArgs: NODE_ARGS,
      launcher: false,
    },
    {
      key: 'git-args',
      label: `keystone --repo (Git), API on, node ${extra}`,
      git: true,
      api: true,
      nodeArgs: NODE_ARGS,
      launcher: false,
    },
  ];
  const rows: Row[] = [];
  if (only.includes('floor')) rows.push(await measureFloor());
  for (const p of plans) {
    if (!only.includes(p.key)) continue;
    try {
      rows.push(await measureAgent(work, standIn, p));
    } catch (e) {
      process.stderr.write(`failed: ${(e as Error).message}\n`);
      rows.push({ key: p.key, label: p.label, error: (e as Error).message });
    }
  }
  // PM2's and supervisord's daemons, from the last supervision bench on this machine (if any).
  let others: Row[] = [];
  const sup = join(benchDir, 'results', 'supervision.json');
  if (existsSync(sup)) {
    const s = JSON.parse(readFileSync(sup, 'utf8'));
    others = ((s.rows ?? []) as { key: string; label: string; version: string; rssKiB: number }[])
      .filter((r) => r.key === 'pm2' || r.key === 'supervisord')
      .map((r) => ({
        key: r.key,
        label: `${r.label} ${r.version} (supervision.json, ${s.date.slice(0, 10)})`,
        rssKiB: r.rssKiB,
      }));
  }
  const floor = rows.find((r) => r.key === 'floor');
  const ran = BUNDLE
    ? `the bundle through packaging/launchers, ${addon ? "the package's SQLite addon" : "node_modules' SQLite addon (the package has none for this Node)"}`
    : 'dist/ through bin/';
  console.log(
    `\nfootprint benchmark — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}; ${N} programs, ${ran}; RSS median over ${IDLE_S} s idle after ${SETTLE_S} s to settle`,
  );
  console.log('');
  console.log(
    `  ${'process'.padEnd(58)} ${'RSS MiB'.padStart(8)} ${'min'.padStart(7)} ${'max'.padStart(7)} ${'at start'.padStart(9)} ${'over floor'.padStart(11)} ${'idle CPU'.padStart(9)}  aim (MiB)`,
  );
  for (const r of [...rows, ...others]) {
    if (r.error) {
      console.log(`  ${r.label.padEnd(58)} failed: ${r.error}`);
      continue;
    }
    const over = floor && r !== floor ? `+${fmt(MiB(r.rssKiB! - floor.rssKiB!), 1)}` : '';
    const aim = aimOf(r.key);
    const verdict = aim === undefined ? '' : `≤ ${aim}: ${MiB(r.rssKiB!) <= aim ? 'met' : 'not met'}`;
    const cell = (kib: number | undefined, w: number) => (kib !== undefined ? fmt(MiB(kib), 1) : '').padStart(w);
    console.log(
      `  ${r.label.padEnd(58)} ${cell(r.rssKiB, 8)} ${cell(r.rssKiBMin, 7)} ${cell(r.rssKiBMax, 7)} ${cell(r.rssKiBAtStart, 9)} ${over.padStart(11)} ${(r.idleCpuPercent !== undefined ? `${fmt(r.idleCpuPercent, 2)} %` : '').padStart(9)}  ${verdict}`,
    );
  }
  if (!others.some((o) => o.key === 'pm2'))
    console.log('  (PM2: not in bench/results/supervision.json; `npm run bench -- supervision` measures it)');
  const cold = rows.find((r) => r.cold)?.cold;
  if (cold) {
    console.log(`\n  cold start, median of ${COLD_RUNS} (wall ms, spawn to exit)`);
    console.log(
      `  ${'keystonectl status (through its launcher, against the agent above)'.padEnd(70)} ${fmt(cold.statusMs, 1).padStart(7)}  ×${fmt(cold.statusMs / cold.nodeMs, 1)} node -e 0  aim ≤ ${AIM_COLD_MS}: ${cold.statusMs <= AIM_COLD_MS ? 'met' : 'not met'}`,
    );
    console.log(`  ${'node -e 0'.padEnd(70)} ${fmt(cold.nodeMs, 1).padStart(7)}`);
  }
  const phased = rows.filter((r) => r.phases?.length);
  if (phased.length) {
    console.log("\n  the agent's own phases (process.memoryUsage(), MiB: rss / heap used / heap total / external)");
    for (const r of phased)
      console.log(
        `  ${r.label.padEnd(58)} ${r.phases!.map((p) => `${p.phase}: ${p.rss_mib}/${p.heap_used_mib}/${p.heap_total_mib}/${p.external_mib}`).join('; ')}`,
      );
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
        build: opts.build,
        idleSeconds: IDLE_S,
        settleSeconds: SETTLE_S,
        aims: { dirMB: AIM_DIR_MIB, gitMB: AIM_GIT_MIB, coldStatusMs: AIM_COLD_MS },
        measures: {
          rssKiB: `VmRSS: the median of one sample a second over the idle window, after ${SETTLE_S} s to settle once every program runs`,
          rssKiBAtStart: `VmRSS: the median of the first ${START_SAMPLES} samples once every program runs`,
          idleCpuPercent: 'utime + stime of the process over the idle window, % of one core',
          phases: "the agent's KEYSTONE_MEMORY_PHASES=1 lines: process.memoryUsage() in MiB at each start-up phase",
          cold: 'keystonectl status through its launcher against the directory agent, and node -e 0, taking turns: wall ms, spawn to exit',
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
