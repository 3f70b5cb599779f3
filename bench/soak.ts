// Soak (issue 16): does the agent's memory grow while it supervises? 50 stand-in programs (lib/stand-in.ts) with a
// tcp:// health check every --interval ms, and kill -9 of one running program after another (--kill-every ms) until
// --restarts crash restarts have happened; the agent's RSS after the first --warm restarts is compared with its RSS
// at the end. Run with `npm run soak` (builds first; minutes, not hours); options after `--`.
//
//   probes     counted by the agent itself: the sum of keystone_probe_latency_seconds_count on GET /metrics (the API is
//              on, at 127.0.0.1 on a free port: the soak exercises it too). A "probe cycle" here is one probe of one
//              program; --probes is the least number of them at the end (with 50 programs every 100 ms, 500 a second).
//   restarts   the agent's `exited` log lines followed by a new pid in `starting` (each kill is of a program the agent
//              logged `running`, so a kill during a start is not counted twice).
//   RSS        VmRSS of the agent (/proc/PID/status): kills paused, --settle seconds to let the heap settle, then the
//              median of one sample a second over --window seconds, with the probes still running (they are the
//              steady state); taken at the same way after the warm-up and at the end. The agent runs without
//              --expose-gc, as on a device. Aim: growth ≤ 1 MiB.
//   fds        open file descriptors of the agent (/proc/PID/fd), sampled with the RSS; the lowest sample of each
//              window (probe sockets come and go). Aim: no growth — a descriptor leaked per restart or per probe
//              would show as hundreds.
//   store      bytes of state.db, its -wal and -shm, and of the whole state directory (component logs included), at
//              the same two moments. Aim: state.db grows by less than 1 MiB over the soak (restarts update rows in
//              place; the history grows per apply, and there is one apply) and the WAL stays within SQLite's own
//              bound (it is checkpointed at 1,000 pages and reused, never shrunk: ≤ 1,000 × 4 KiB plus 1 MiB). Every
//              restart commits a few pages to the WAL, so its size alone climbs to that bound early in a soak.
//
// The agent gets --healthy-spell 1s and a crash-loop limit no soak reaches, so that 20 kills of each program stay
// restarts (on a device 10 quick crashes make a crash loop, which the soak is not about); restarts come after the
// first restart delay (100 ms). The failure threshold makes a 5 s start budget (interval × threshold), a node start on a busy machine.
//
// Options: --programs 50  --interval 100 (ms)  --restarts 1000  --probes 10000  --warm 100  --kill-every 150 (ms)
//          --settle 5 (s)  --window 15 (s)  --port-base 27000  --node-args "" (flags for the agent's node, e.g. --max-semi-space-size=1)
//          --aims rss,fds,store (the aims whose miss makes the exit code 1; a short CI run leaves rss out: a heap
//          measured over seconds is noise, descriptors and bytes are not)
import { mkdtempSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { machine } from './lib/machine.js';
import { benchDir, ensureDir } from './lib/paths.js';
import { assertPortsFree } from './lib/ports.js';
import { writeProcessRepo } from './lib/process-repo.js';
import { cleanEnv, cleanUpOnSignal, dirBytes, fdCount, killStragglers, rssKiB } from './lib/processes.js';
import { writeStandIn } from './lib/stand-in.js';
import { startAgent, type Agent } from './lib/start-agent.js';
import { fmt, median, sleep } from './lib/stats.js';

const { values: opts } = parseArgs({
  options: {
    programs: { type: 'string', default: '50' },
    interval: { type: 'string', default: '100' },
    restarts: { type: 'string', default: '1000' },
    probes: { type: 'string', default: '10000' },
    warm: { type: 'string', default: '100' },
    'kill-every': { type: 'string', default: '150' },
    settle: { type: 'string', default: '5' },
    window: { type: 'string', default: '15' },
    'port-base': { type: 'string', default: '27000' },
    'node-args': { type: 'string', default: '' },
    aims: { type: 'string', default: 'rss,fds,store' },
  },
});
const N = Number(opts.programs);
const INTERVAL_MS = Number(opts.interval);
const RESTARTS = Number(opts.restarts);
const PROBES = Number(opts.probes);
const WARM = Number(opts.warm);
const KILL_EVERY_MS = Number(opts['kill-every']);
const SETTLE_S = Number(opts.settle);
const WINDOW_S = Number(opts.window);
const PORT_BASE = Number(opts['port-base']);
const NODE_ARGS = opts['node-args'].split(' ').filter(Boolean);
if (
  ![N, INTERVAL_MS, RESTARTS, PROBES, WARM, KILL_EVERY_MS, SETTLE_S, WINDOW_S, PORT_BASE].every(
    (x) => Number.isFinite(x) && x >= 0,
  ) ||
  N < 1 ||
  WARM >= RESTARTS ||
  WINDOW_S < 1
) {
  console.error(
    'usage: node --import tsx bench/soak.ts [--programs 50] [--interval 100] [--restarts 1000] [--probes 10000] [--warm 100] [--kill-every 150] [--settle 5] [--window 15] [--port-base 27000] [--node-args "…"]',
  );
  process.exit(2);
}
const AIMS = new Set(
  opts.aims
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean),
);
if ([...AIMS].some((a) => !['rss', 'fds', 'store'].includes(a))) {
  console.error(`--aims: a comma list of rss, fds, store (got ${opts.aims})`);
  process.exit(2);
}
const AIM_KIB = 1024;
const AIM_STORE_BYTES = 1024 * 1024;
const WAL_BOUND_BYTES = 1000 * 4096 + 1024 * 1024;
/** Size of one file, 0 when absent (the -wal and -shm files come and go with checkpoints). */
const fileBytes = (file: string): number => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};
const resultsFile = join(benchDir, 'results', 'soak.json');
const MiB = (kib: number): number => kib / 1024;

const started = performance.now();
const work = mkdtempSync(join(tmpdir(), 'keystone-soak-'));
chmodSync(work, 0o755);
cleanUpOnSignal(work, () => rmSync(work, { recursive: true, force: true }));
const names = Array.from({ length: N }, (_, i) => `s${String(i).padStart(2, '0')}`);
const ports = names.map((_, i) => PORT_BASE + i);
let agent: Agent | undefined;
try {
  await assertPortsFree(ports);
  const standIn = writeStandIn(join(work, 'bin'));
  const repo = join(work, 'repo');
  const stateDir = join(work, 'state');
  const storeBytes = () =>
    ['', '-wal', '-shm'].reduce((n, suffix) => n + fileBytes(join(stateDir, `state.db${suffix}`)), 0);
  const plan = writeProcessRepo(
    repo,
    names.map((name, i) => ({
      name,
      port: ports[i]!,
      delay: 0,
      check: 'tcp' as const,
      interval: `${INTERVAL_MS}ms`,
      timeout: '1s',
      threshold: Math.max(3, Math.ceil(5000 / INTERVAL_MS)),
      dependencies: [],
    })),
    standIn,
  );
  agent = startAgent({
    repo,
    plan,
    stateDir,
    concurrency: 64,
    env: cleanEnv(),
    nodeArgs: NODE_ARGS,
    extraArgs: [
      '--listen',
      '127.0.0.1:0',
      '--healthy-spell',
      '1s',
      '--crash-loop-limit',
      '1000000',
      '--max-backoff',
      '1s',
    ],
  });
  process.stderr.write(`soak: starting ${N} programs (tcp check every ${INTERVAL_MS} ms)… `);
  await agent.waitFor(
    (e) => e.msg === 'all components running' || e.msg?.startsWith('apply failed'),
    120_000,
    '"all components running"',
  );
  if (!agent.events.some((e) => e.msg === 'all components running'))
    throw new Error(
      `the agent did not bring every program up: ${JSON.stringify(agent.events.find((e) => e.msg?.startsWith('apply failed')))} ${JSON.stringify(agent.events.filter((e) => e.level >= 40).slice(-3))}`,
    );
  const listening = agent.events.find((e) => e.msg === 'HTTP API listening');
  const apiPort = Number(/:(\d+)$/.exec(String(listening?.addresses?.[0] ?? ''))?.[1]);
  if (!apiPort) throw new Error(`no API address in the agent's log (${JSON.stringify(listening)})`);
  process.stderr.write('up\n');

  /** Probes the agent has made (GET /metrics: keystone_probe_latency_seconds_count summed over components and results). */
  const probesSoFar = async () => {
    const res = await fetch(`http://127.0.0.1:${apiPort}/metrics`);
    const text = await res.text();
    let n = 0;
    for (const m of text.matchAll(/^keystone_probe_latency_seconds_count\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
    return n;
  };
  // The agent's view of each program: its last state and pid.
  const stateOf = new Map<string, { state?: string; pid?: number }>();
  let seen = 0;
  let restarts = 0;
  const pendingExit = new Set<string>();
  const follow = () => {
    for (; seen < agent!.events.length; seen++) {
      const e = agent!.events[seen]!;
      if (!e.component || !names.includes(e.component)) continue;
      if (e.msg === 'exited') pendingExit.add(e.component);
      if (e.state) {
        const s = stateOf.get(e.component) ?? {};
        s.state = e.state;
        if (Number.isInteger(e.pid)) s.pid = e.pid;
        stateOf.set(e.component, s);
        if (e.state === 'starting' && pendingExit.delete(e.component)) restarts++;
      }
    }
  };
  let next = 0;
  let kills = 0;
  /** Kill -9 running programs, one every KILL_EVERY_MS, until `target` restarts have happened and every kill came back. */
  const killUntil = async (target: number) => {
    for (;;) {
      follow();
      if (restarts >= target) return;
      if (kills < target) {
        for (let k = 0; k < N; k++) {
          const name = names[(next + k) % N]!;
          const s = stateOf.get(name);
          if (s?.state === 'running' && s.pid && !pendingExit.has(name)) {
            try {
              process.kill(s.pid, 'SIGKILL');
              kills++;
              s.state = 'killed';
            } catch {
              /* gone already: the agent will say so */
            }
            next = (next + k + 1) % N;
            break;
          }
        }
      }
      await sleep(kills < target ? KILL_EVERY_MS : 50);
      if (kills >= target + N) throw new Error(`${kills} kills but only ${restarts} restarts`);
    }
  };
  /** Kills paused: let the heap settle, then the median RSS over the window. */
  const sampleRss = async (label: string) => {
    await sleep(SETTLE_S * 1000);
    const samples: number[] = [];
    const fds: number[] = [];
    for (let i = 0; i < WINDOW_S; i++) {
      await sleep(1000);
      samples.push(rssKiB(agent!.pid)!);
      fds.push(fdCount(agent!.pid)!);
    }
    follow();
    const probes = await probesSoFar();
    const rec = {
      label,
      restarts,
      probes,
      rssKiB: median(samples),
      rssKiBMin: Math.min(...samples),
      rssKiBMax: Math.max(...samples),
      samples,
      fdsMin: Math.min(...fds),
      fdsMax: Math.max(...fds),
      storeBytes: storeBytes(),
      storeFiles: Object.fromEntries(
        ['', '-wal', '-shm'].map((x) => [`state.db${x}`, fileBytes(join(stateDir, `state.db${x}`))]),
      ) as Record<'state.db' | 'state.db-wal' | 'state.db-shm', number>,
      stateDirBytes: dirBytes(stateDir),
      atSeconds: +((performance.now() - started) / 1000).toFixed(1),
    };
    process.stderr.write(
      `  ${label}: ${restarts} restarts, ${probes} probes, RSS ${fmt(MiB(rec.rssKiB), 1)} MiB (min ${fmt(MiB(rec.rssKiBMin), 1)}, max ${fmt(MiB(rec.rssKiBMax), 1)}), ${rec.fdsMin}–${rec.fdsMax} fds, store ${fmt(rec.storeBytes / 1024)} KiB, state dir ${fmt(rec.stateDirBytes / 1024)} KiB\n`,
    );
    return rec;
  };

  const upRss = rssKiB(agent.pid);
  // Warm-up: the first restarts and probes (every code path run, caches and pools at their working size).
  process.stderr.write(`soak: warm-up to ${WARM} restarts…\n`);
  await killUntil(WARM);
  while ((await probesSoFar()) < Math.min(PROBES, WARM * N)) await sleep(200);
  const warm = await sampleRss('after warm-up');
  process.stderr.write(`soak: on to ${RESTARTS} restarts and ${PROBES} probes (one kill every ${KILL_EVERY_MS} ms)…\n`);
  const t0 = performance.now();
  await killUntil(RESTARTS);
  while ((await probesSoFar()) < PROBES) await sleep(500);
  const soakSeconds = (performance.now() - t0) / 1000;
  const end = await sampleRss('at the end');
  const growthKiB = end.rssKiB - warm.rssKiB;
  // The lowest sample of each window too: the heap breathes (probes allocate all along), its troughs do not lie about growth.
  const growthOfMinKiB = end.rssKiBMin - warm.rssKiBMin;
  const rssMet = growthKiB <= AIM_KIB && growthOfMinKiB <= AIM_KIB;
  const fdGrowth = end.fdsMin - warm.fdsMin;
  const fdsMet = fdGrowth <= 0;
  const storeGrowth = end.storeBytes - warm.storeBytes;
  const dbGrowth = end.storeFiles['state.db'] - warm.storeFiles['state.db'];
  const storeMet = dbGrowth < AIM_STORE_BYTES && end.storeFiles['state.db-wal'] <= WAL_BOUND_BYTES;
  const missed = [...(rssMet ? [] : ['rss']), ...(fdsMet ? [] : ['fds']), ...(storeMet ? [] : ['store'])];
  const ok = missed.every((a) => !AIMS.has(a));
  follow();
  const stillRunning = names.filter((n) => stateOf.get(n)?.state === 'running').length;
  const crashLooping = names.filter((n) => stateOf.get(n)?.state === 'crash-looping').length;

  console.log(
    `\nsoak — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}; ${N} programs, tcp check every ${INTERVAL_MS} ms, ` +
      `kill -9 every ${KILL_EVERY_MS} ms${NODE_ARGS.length ? `; agent node ${NODE_ARGS.join(' ')}` : ''}`,
  );
  console.log('');
  console.log(
    '                      restarts     probes   RSS MiB (median)   min     max    fds   store KiB   state dir KiB',
  );
  for (const r of [warm, end])
    console.log(
      `  ${r.label.padEnd(18)} ${String(r.restarts).padStart(9)} ${String(r.probes).padStart(10)}   ${fmt(MiB(r.rssKiB), 1).padStart(16)} ${fmt(MiB(r.rssKiBMin), 1).padStart(7)} ${fmt(MiB(r.rssKiBMax), 1).padStart(7)} ${String(r.fdsMin).padStart(6)} ${fmt(r.storeBytes / 1024).padStart(11)} ${fmt(r.stateDirBytes / 1024).padStart(15)}`,
    );
  console.log('');
  console.log(
    `growth: ${growthKiB >= 0 ? '+' : ''}${fmt(MiB(growthKiB), 2)} MiB over ${end.restarts - warm.restarts} restarts and ${end.probes - warm.probes} probes ` +
      `(${fmt(soakSeconds)} s; of the lowest samples: ${growthOfMinKiB >= 0 ? '+' : ''}${fmt(MiB(growthOfMinKiB), 2)} MiB); aim ≤ 1 MiB: ${rssMet ? 'met' : 'NOT met'}`,
  );
  console.log(
    `file descriptors: ${warm.fdsMin} → ${end.fdsMin} (lowest sample of each window); aim no growth: ${fdsMet ? 'met' : 'NOT met'}`,
  );
  console.log(
    `store: ${fmt(warm.storeBytes / 1024)} → ${fmt(end.storeBytes / 1024)} KiB (state.db ${fmt(warm.storeFiles['state.db'] / 1024)} → ${fmt(end.storeFiles['state.db'] / 1024)}, WAL ${fmt(warm.storeFiles['state.db-wal'] / 1024)} → ${fmt(end.storeFiles['state.db-wal'] / 1024)}); state directory ${fmt(warm.stateDirBytes / 1024)} → ${fmt(end.stateDirBytes / 1024)} KiB; aim state.db growth < 1 MiB and WAL ≤ ${fmt(WAL_BOUND_BYTES / 1024)} KiB: ${storeMet ? 'met' : 'NOT met'}`,
  );
  if (stillRunning !== N) {
    const others = names.filter((n) => stateOf.get(n)?.state !== 'running').map((n) => `${n} ${stateOf.get(n)?.state}`);
    console.log(
      `note: ${stillRunning} of ${N} programs running when the soak ended (${crashLooping} crash-looping; the others: ${others.join(', ')})`,
    );
  }

  ensureDir(join(benchDir, 'results'));
  writeFileSync(
    resultsFile,
    JSON.stringify(
      {
        bench: 'soak',
        date: new Date().toISOString(),
        ...machine(),
        programs: N,
        intervalMs: INTERVAL_MS,
        killEveryMs: KILL_EVERY_MS,
        agentNodeArgs: NODE_ARGS,
        settleSeconds: SETTLE_S,
        windowSeconds: WINDOW_S,
        measures: {
          rssKiB:
            'VmRSS of the agent: kills paused, settleSeconds to settle, then the median of one sample a second over windowSeconds (probes running)',
          probes: "sum of keystone_probe_latency_seconds_count on the agent's GET /metrics",
          restarts: "an `exited` log line followed by the program's `starting`",
        },
        rssKiBWhenUp: upRss,
        warm,
        end,
        growthKiB,
        growthOfMinKiB,
        aimKiB: AIM_KIB,
        met: rssMet,
        fdGrowth,
        fdsMet,
        storeGrowthBytes: storeGrowth,
        dbGrowthBytes: dbGrowth,
        walBoundBytes: WAL_BOUND_BYTES,
        storeMet,
        aimsChecked: [...AIMS],
        allAimsMet: ok,
        soakSeconds: +soakSeconds.toFixed(1),
        kills,
        stillRunning,
        benchSeconds: +((performance.now() - started) / 1000).toFixed(1),
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`\nwrote ${resultsFile}`);
  if (!ok) process.exitCode = 1;
} finally {
  if (agent) await agent.stop().catch(() => {});
  await killStragglers(agent ? [agent.pid, ...agent.componentPids()] : [], work);
  rmSync(work, { recursive: true, force: true });
}
