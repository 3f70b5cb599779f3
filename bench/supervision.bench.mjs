// Benchmark of supervision: the same 50 programs supervised in turn by the Keystone agent, supervisord (Debian's
// `supervisor`) and PM2 (npm), measured in one run. Run by hand (`npm run bench -- supervision`, which builds
// first); it asserts no timing, it reports.
//
// The programs: 50 copies of the stand-in of harness.mjs (`node stand-in.mjs --port P --delay 0`), independent
// of each other, restart policy "always" everywhere. For each supervisor:
//   restart    kill -9 one supervised program and time until a new process (another pid) answers on its port,
//              polled every 2 ms from the bench; 20 kills spread over the programs, one at a time, each once
//              the supervisor has settled the previous restart (the agent logged state=running; supervisord
//              moved it to RUNNING after `startsecs`, 1 s: a kill before that is a failed start, handled with
//              backoff) and --gap ms more; the median is reported. Each kill is split with the programs' own stamps
//              (harness.mjs): kill → the new node process exists (the supervisor notices the exit, decides and
//              spawns), node boot (time origin → first line of JavaScript), first line → listening, and
//              listening → seen by the bench. The spawn overhead is the median of (kill → the new node process
//              exists) minus the supervisor's own restart delay (Keystone: 100 ms, the first restart of SPEC §5; PM2:
//              restart_delay, 0 by default; supervisord: none, but its main loop only looks at exits once a second).
//   burst      --burst programs (5) killed at the same moment: the time until the last of them answers again.
//   memory     VmRSS of the supervisor process itself (/proc/PID/status; the median of one sample a second
//              over the idle window, as a garbage-collected heap breathes): the agent (node bin/keystone.js),
//              supervisord (python3), PM2's God daemon; and, beside it, the 50 programs' RSS added up (PM2
//              runs each program inside its own wrapper, ProcessContainerFork, which costs memory there).
//   idle CPU   utime + stime of the supervisor process (/proc/PID/stat: what the agent's own process.cpuUsage()
//              reports, all threads) over an idle window (60 s) while it supervises the 50 programs, as % of one core (the programs' own CPU goes to the JSON only: it
//              mostly tells how recently they started, node collecting garbage some 10-20 s after start-up).
// Every supervisor starts with the same small environment (harness.mjs cleanEnv: PATH, HOME, LANG), which
// the programs inherit from supervisord and PM2 (Keystone builds theirs itself from the recipe).
// Keystone runs twice: as the others do (no health check: it watches the process), and with a tcp:// check
// every 10 s on each program (what a recipe usually has; the others have no such probes), without the kills.
// Ratios are against the first Keystone row.
//
// supervisord: installed with `apt-get install -y supervisor` when missing and the bench runs as root, else a
// skip line. PM2: installed when missing with `npm install --no-save --prefix bench/.cache pm2@5` (never in
// package.json); a failed install is a skip line.
//
// Options: --programs 50  --kills 20  --burst 5  --idle 60 (seconds)  --gap 500 (ms after a settled restart before the
// next kill)  --only keystone,keystone-probed,supervisord,pm2  --port-base 32000
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  askPid,
  assertPortsFree,
  benchDir,
  busyNote,
  cleanUpOnSignal,
  cleanEnv,
  clockTicksPerSecond,
  cmdlineOf,
  ensureDir,
  epochNow,
  fmt,
  isLive,
  killStragglers,
  load1,
  machine,
  resultsHead,
  othersCpu,
  median,
  procStat,
  projectDir,
  ratio,
  readStandInLog,
  readTextIfAny,
  round,
  rssKiB,
  signalGroup,
  signalPid,
  sleep,
  startAgent,
  writeProcessRepo,
  writeStandIn,
} from './harness.mjs';

const resultsFile = join(benchDir, 'results', 'supervision.json');
const cacheDir = join(benchDir, '.cache');
const pm2Bin = join(cacheDir, 'node_modules', 'pm2', 'bin', 'pm2');
const ALL = ['keystone', 'keystone-probed', 'supervisord', 'pm2'];

const { values: opts } = parseArgs({
  options: {
    programs: { type: 'string', default: '50' },
    kills: { type: 'string', default: '20' },
    burst: { type: 'string', default: '5' },
    idle: { type: 'string', default: '60' },
    gap: { type: 'string', default: '500' },
    only: { type: 'string', default: ALL.join(',') },
    'port-base': { type: 'string', default: '32000' },
  },
});
const N = Number(opts.programs);
const KILLS = Number(opts.kills);
const BURST = Number(opts.burst);
const IDLE_S = Number(opts.idle);
const GAP_MS = Number(opts.gap);
const PORT_BASE = Number(opts['port-base']);
const only = opts.only.split(',').map((s) => s.trim());
if (![N, KILLS, BURST, IDLE_S, GAP_MS, PORT_BASE].every((x) => Number.isFinite(x) && x >= 0) || N < 1 || !Number.isInteger(IDLE_S) || IDLE_S < 1 || KILLS > N || BURST > N || only.some((s) => !ALL.includes(s))) {
  console.error(`usage: node bench/supervision.bench.mjs [--programs 50] [--kills 20] [--burst 5] [--idle 60] [--gap 500] [--only ${ALL.join(',')}] [--port-base 32000]`);
  process.exit(2);
}

const names = Array.from({ length: N }, (_, i) => `p${String(i).padStart(2, '0')}`);
const ports = names.map((_, i) => PORT_BASE + i);
const isRoot = process.getuid?.() === 0;
const MiB = (kib) => kib / 1024;

// ─── the supervisors ────────────────────────────────────────────────────────────────────────────────────

function keystone(work, standIn, { probed }) {
  const dir = join(work, probed ? 'keystone-probed' : 'keystone');
  const repo = join(dir, 'repo');
  const stateDir = join(dir, 'state');
  const plan = writeProcessRepo(
    repo,
    names.map((name, i) => ({ name, port: ports[i], delay: 0, ...(probed && { check: 'tcp', interval: '10s', timeout: '1s', threshold: 3 }), dependencies: [] })),
    standIn,
  );
  let agent;
  return {
    key: probed ? 'keystone-probed' : 'keystone',
    label: probed ? 'keystone, tcp check /10 s' : 'keystone',
    /** The restart policy's delay before a first restart (FIRST_RESTART_MS of SPEC §5). */
    restartDelayMs: 100,
    version: JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8')).version,
    kills: !probed,
    async start() {
      // The API on a port of the bench's own range (with its /metrics, as on a device): 8080 may be taken on a shared machine.
      agent = startAgent({ repo, plan, stateDir, concurrency: 64, env: cleanEnv(), extraArgs: ['--listen', `127.0.0.1:${PORT_BASE + N + (probed ? 2 : 1)}`] });
      await agent.waitFor((e) => e.msg === 'all components running' || e.msg?.startsWith('apply failed'), 120_000, '"all components running"');
      if (!agent.events.some((e) => e.msg === 'all components running')) throw new Error('the agent did not bring every program up');
      return agent.pid;
    },
    stdoutLog: (name) => join(stateDir, 'components', name, 'logs', 'stdout.log'),
    /** The agent's view of one restart: when it logged the exit, and the new instance's `starting`. */
    restartLog(name, newPid) {
      const exited = agent.events.filter((e) => e.component === name && e.msg === 'exited').at(-1);
      const starting = agent.events.find((e) => e.component === name && e.state === 'starting' && e.pid === newPid);
      return { exitedAt: exited?.t, startingAt: starting?.t };
    },
    /** Until the agent has the new instance running again (its engine queue is free for the next restart). */
    async settled(name, newPid) {
      const i = agent.events.findIndex((e) => e.component === name && e.state === 'starting' && e.pid === newPid);
      await agent.waitFor((e) => i >= 0 && agent.events.indexOf(e) > i && e.component === name && e.state === 'running', 10_000, `${name} running again`).catch(() => {});
    },
    async stop() {
      await agent.stop();
      return [agent.pid, ...agent.componentPids()];
    },
  };
}

function supervisord(work, standIn) {
  const dir = ensureDir(join(work, 'supervisord'));
  const conf = join(dir, 'supervisord.conf');
  const lines = [
    '[supervisord]',
    'nodaemon=true',
    `logfile=${join(dir, 'supervisord.log')}`,
    `pidfile=${join(dir, 'supervisord.pid')}`,
    `childlogdir=${dir}`,
    'loglevel=info',
    ...(isRoot ? ['user=root'] : []),
  ];
  names.forEach((name, i) =>
    lines.push(
      '',
      `[program:${name}]`,
      `command=${process.execPath} ${standIn} --port ${ports[i]} --delay 0`,
      'autostart=true',
      'autorestart=true',
      'startsecs=1',
      'stopasgroup=true',
      'killasgroup=true',
      'stopwaitsecs=5',
      `stdout_logfile=${join(dir, `${name}.out`)}`,
      `stderr_logfile=${join(dir, `${name}.err`)}`,
    ),
  );
  writeFileSync(conf, lines.join('\n') + '\n');
  let child;
  let exited;
  return {
    key: 'supervisord',
    label: 'supervisord',
    /** No restart delay: an exit is seen in its main loop, which waits up to 1 s in select(). */
    restartDelayMs: 0,
    version: spawnSync('supervisord', ['--version'], { encoding: 'utf8' }).stdout?.trim(),
    kills: true,
    async start() {
      child = spawn('supervisord', ['-n', '-c', conf], { env: cleanEnv(), stdio: 'ignore', detached: true });
      exited = new Promise((r) => child.once('exit', r));
      child.once('error', () => {});
      await sleep(200);
      if (!isLive(child.pid)) throw new Error(`supervisord exited at once: ${readTextIfAny(join(dir, 'supervisord.log')).slice(-1000)}`);
      return child.pid;
    },
    stdoutLog: (name) => join(dir, `${name}.out`),
    /** Until supervisord has moved the new process from STARTING to RUNNING (startsecs): a kill before that is a failed start, handled with backoff. */
    async settled(name) {
      const count = (re) => (readTextIfAny(join(dir, 'supervisord.log')).match(re) ?? []).length;
      const spawned = new RegExp(`spawned: '${name}'`, 'g');
      const running = new RegExp(`success: ${name} entered RUNNING`, 'g');
      for (let k = 0; k < 200 && count(running) < count(spawned); k++) await sleep(25);
    },
    async stop() {
      signalPid(child.pid, 'SIGTERM');
      const t = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), 30_000);
      await exited;
      clearTimeout(t);
      return [child.pid];
    },
  };
}

function pm2(work, standIn) {
  const home = ensureDir(join(work, 'pm2'));
  const logs = ensureDir(join(home, 'logs'));
  const eco = join(home, 'apps.json');
  writeFileSync(
    eco,
    JSON.stringify({
      apps: names.map((name, i) => ({
        name,
        script: standIn,
        args: ['--port', String(ports[i]), '--delay', '0'],
        interpreter: process.execPath,
        exec_mode: 'fork',
        instances: 1,
        autorestart: true,
        watch: false,
        out_file: join(logs, `${name}.out`),
        error_file: join(logs, `${name}.err`),
        pid_file: join(home, `${name}.pid`),
      })),
    }),
  );
  const env = cleanEnv({ PM2_HOME: home, PM2_SILENT: 'true' });
  const cli = (...args) => spawnSync(process.execPath, [pm2Bin, ...args], { env, encoding: 'utf8', timeout: 120_000 });
  let daemon;
  return {
    key: 'pm2',
    label: 'pm2',
    /** restart_delay, 0 by default. */
    restartDelayMs: 0,
    version: JSON.parse(readFileSync(join(cacheDir, 'node_modules', 'pm2', 'package.json'), 'utf8')).version,
    kills: true,
    async start() {
      const r = cli('start', eco);
      if (r.status !== 0) throw new Error(`pm2 start exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-1500)}`);
      daemon = Number(readTextIfAny(join(home, 'pm2.pid')).trim());
      if (!daemon || !isLive(daemon)) throw new Error(`no PM2 daemon pid in ${join(home, 'pm2.pid')}`);
      return daemon;
    },
    stdoutLog: (name) => join(logs, `${name}.out`),
    async stop() {
      cli('kill');
      for (let k = 0; k < 100 && daemon && isLive(daemon); k++) await sleep(50);
      if (daemon && isLive(daemon) && cmdlineOf(daemon)?.includes(home)) signalPid(daemon, 'SIGKILL');
      return daemon ? [daemon] : [];
    },
  };
}

// ─── availability (installs allowed by the brief) ──────────────────────────────────────────────────────

function haveCommand(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
}

function ensureSupervisord() {
  if (haveCommand('supervisord')) return { ok: true };
  if (!isRoot) return { ok: false, why: 'supervisord is not installed and the bench is not root (apt-get install supervisor)' };
  process.stderr.write('installing supervisor (apt-get install -y supervisor)… ');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let r = spawnSync('apt-get', ['install', '-y', '-qq', 'supervisor'], { env, encoding: 'utf8' });
  if (r.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { env, encoding: 'utf8' });
    r = spawnSync('apt-get', ['install', '-y', '-qq', 'supervisor'], { env, encoding: 'utf8' });
  }
  process.stderr.write(r.status === 0 ? 'done\n' : 'failed\n');
  return haveCommand('supervisord') ? { ok: true, installed: true } : { ok: false, why: `apt-get install supervisor failed: ${(r.stderr || '').trim().slice(-300)}` };
}

function ensurePm2() {
  if (existsSync(pm2Bin)) return { ok: true };
  process.stderr.write(`installing pm2@5 into ${cacheDir} (npm install --no-save)… `);
  mkdirSync(cacheDir, { recursive: true });
  const r = spawnSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', cacheDir, 'pm2@5'], { encoding: 'utf8' });
  process.stderr.write(r.status === 0 ? 'done\n' : 'failed\n');
  return existsSync(pm2Bin) ? { ok: true, installed: true } : { ok: false, why: `npm install pm2@5 failed: ${(r.stderr || '').trim().slice(-300)}` };
}

// ─── the measures ───────────────────────────────────────────────────────────────────────────────────────

/** Polls every program until each answers (with its pid), or throws after `timeoutMs`. */
async function waitAllUp(timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  const pids = new Array(N);
  for (;;) {
    await Promise.all(ports.map(async (p, i) => (pids[i] = pids[i] ?? (await askPid(p, 500))?.pid)));
    const missing = pids.filter((x) => x === undefined).length;
    if (missing === 0) return pids;
    if (Date.now() > deadline) throw new Error(`${missing} of ${N} programs never answered`);
    await sleep(100);
  }
}

/** Kill -9 the program on `port` and wait for another process to answer there. */
async function killAndTime(port) {
  const before = await askPid(port, 1000);
  if (!before) return { error: 'not answering before the kill' };
  const killedAt = epochNow();
  process.kill(before.pid, 'SIGKILL');
  const deadline = killedAt + 15_000;
  for (;;) {
    const r = await askPid(port, 250);
    if (r && r.pid !== before.pid) return { oldPid: before.pid, newPid: r.pid, killedAt, seenAt: r.connectedAt, ms: r.connectedAt - killedAt };
    if (epochNow() > deadline) return { oldPid: before.pid, killedAt, error: 'not back within 15 s' };
    await sleep(2);
  }
}

const cpuTicks = (pids) => pids.reduce((s, p) => s + (procStat(p)?.ticks ?? 0), 0);
const sumRss = (pids) => pids.reduce((s, p) => s + (rssKiB(p) ?? 0), 0);

async function measure(sup, work) {
  await assertPortsFree(ports);
  process.stderr.write(`${sup.label}: starting ${N} programs… `);
  const seen = new Set();
  const result = { key: sup.key, label: sup.label, version: sup.version };
  try {
    const t0 = epochNow();
    const pid = await sup.start();
    for (const p of await waitAllUp(120_000)) seen.add(p);
    const upMs = epochNow() - t0;
    process.stderr.write(`up in ${fmt(upMs)} ms; `);
    Object.assign(result, { supervisorPid: pid, upMs: round(upMs, 0) });
    await sleep(1500);
    const kills = [];
    if (sup.kills && KILLS > 0) {
      process.stderr.write(`${KILLS} kills… `);
      for (let k = 0; k < KILLS; k++) {
        const i = Math.floor(((k + 0.5) * N) / KILLS);
        const r = { program: names[i], ...(await killAndTime(ports[i])) };
        if (r.newPid) seen.add(r.newPid);
        kills.push(r);
        if (r.newPid && sup.settled) await sup.settled(r.program, r.newPid);
        await sleep(GAP_MS);
      }
      // Split each restart with the new program's own stamps (and, for Keystone, the agent's log).
      for (const r of kills) {
        if (!r.newPid) continue;
        const st = readStandInLog(readTextIfAny(sup.stdoutLog(r.program))).get(r.newPid);
        if (st) Object.assign(r, { toNodeMs: st.origin - r.killedAt, bootMs: st.started - st.origin, toListenMs: st.listening - st.started, toSeenMs: r.seenAt - st.listening });
        if (sup.restartLog) {
          const a = sup.restartLog(r.program, r.newPid);
          if (a.exitedAt !== undefined) r.toExitLoggedMs = a.exitedAt - r.killedAt;
          if (a.startingAt !== undefined && a.exitedAt !== undefined) r.exitToStartingMs = a.startingAt - a.exitedAt;
        }
      }
      if (BURST > 0) {
        // Several crashes at once (a shared dependency dying, an OOM kill sweeping): all killed together, each timed.
        process.stderr.write(`${BURST} at once… `);
        const picks = Array.from({ length: BURST }, (_, k) => Math.floor((k * N) / BURST));
        const before = await Promise.all(picks.map((i) => askPid(ports[i], 1000)));
        const killedAt = epochNow();
        for (const b of before) if (b) process.kill(b.pid, 'SIGKILL');
        const back = await Promise.all(
          picks.map(async (i, k) => {
            for (;;) {
              const r = await askPid(ports[i], 250);
              if (r && r.pid !== before[k]?.pid) return (seen.add(r.pid), { program: names[i], newPid: r.pid, ms: r.connectedAt - killedAt });
              if (epochNow() > killedAt + 30_000) return { program: names[i], ms: NaN };
              await sleep(2);
            }
          }),
        );
        for (const b of back) if (b.newPid && sup.settled) await sup.settled(b.program, b.newPid);
        const ms = back.map((b) => b.ms).sort((a, b) => a - b);
        result.burst = { killed: BURST, firstMs: round(ms[0]), lastMs: round(ms.at(-1)), eachMs: ms.map((x) => round(x)) };
      }
      await sleep(1000);
    }
    const pids = await waitAllUp(30_000);
    for (const p of pids) seen.add(p);
    const rssBefore = rssKiB(pid);
    const progRssBefore = sumRss(pids);
    process.stderr.write(`idle ${IDLE_S} s… `);
    const c0 = cpuTicks([pid]);
    const p0 = cpuTicks(pids);
    const w0 = epochNow();
    const rssSamples = [];
    for (let k = 0; k < IDLE_S; k++) {
      await sleep(1000);
      rssSamples.push(rssKiB(pid));
    }
    const c1 = cpuTicks([pid]);
    const p1 = cpuTicks(pids);
    const wallS = (epochNow() - w0) / 1000;
    const hz = clockTicksPerSecond();
    const stillThere = (await Promise.all(ports.map((p) => askPid(p, 500)))).filter((r) => r && pids.includes(r.pid)).length;
    const ok = kills.filter((r) => Number.isFinite(r.ms));
    Object.assign(result, {
      restart: ok.length
        ? {
            kills: kills.length,
            failed: kills.length - ok.length,
            medianMs: round(median(ok.map((r) => r.ms))),
            minMs: round(Math.min(...ok.map((r) => r.ms))),
            maxMs: round(Math.max(...ok.map((r) => r.ms))),
            restartDelayMs: sup.restartDelayMs,
            // kill → the new node process exists, beyond the supervisor's own delay: the p50 of the kills.
            spawnOverheadMs: round(median(ok.map((r) => r.toNodeMs).filter(Number.isFinite)) - (sup.restartDelayMs ?? 0), 2),
            parts: Object.fromEntries(
              ['toExitLoggedMs', 'exitToStartingMs', 'toNodeMs', 'bootMs', 'toListenMs', 'toSeenMs']
                .map((k) => [k, ok.map((r) => r[k]).filter(Number.isFinite)])
                .filter(([, v]) => v.length)
                .map(([k, v]) => [k, round(median(v))]),
            ),
            each: kills.map((r) => ({ program: r.program, ms: round(r.ms), ...(r.error && { error: r.error }) })),
          }
        : undefined,
      rssKiB: median(rssSamples.filter(Number.isFinite)),
      rssKiBMax: Math.max(...rssSamples.filter(Number.isFinite)),
      rssKiBBeforeIdle: rssBefore,
      programsRssKiB: sumRss(pids) || progRssBefore,
      idleCpuPercent: round(((c1 - c0) / hz / wallS) * 100, 2),
      programsIdleCpuPercent: round(((p1 - p0) / hz / wallS) * 100, 2),
      idleSeconds: round(wallS, 1),
      stillSupervised: stillThere,
    });
    process.stderr.write('done\n');
  } finally {
    const more = await sup.stop().catch(() => []);
    result.stragglersKilled = await killStragglers([...seen, ...more], work);
  }
  return result;
}

// ─── output ─────────────────────────────────────────────────────────────────────────────────────────────

function table(rows, skips) {
  const ref = rows.find((r) => r.key === 'keystone') ?? rows[0];
  const lines = [];
  const head = `${'supervisor'.padEnd(26)} ${'restart ms'.padStart(10)} ${'(min–max)'.padStart(13)} ${'÷ks'.padStart(6)} │ ${`${BURST} at once: last`.padStart(17)} ${'÷ks'.padStart(6)} │ ${'RSS MiB'.padStart(7)} ${'÷ks'.padStart(6)} │ ${'idle CPU %'.padStart(10)} ${'÷ks'.padStart(7)} │ ${`${N} programs' RSS MiB`.padStart(20)}`;
  lines.push(head);
  lines.push('─'.repeat(head.length));
  for (const r of rows) {
    const rs = r.restart;
    lines.push(
      [
        `${r.label}${r.version ? ` ${r.version}` : ''}`.padEnd(26),
        (rs ? fmt(rs.medianMs) : '—').padStart(10),
        (rs ? `(${fmt(rs.minMs)}–${fmt(rs.maxMs)})` : '').padStart(13),
        (rs && ref.restart ? ratio(rs.medianMs, ref.restart.medianMs) : '').padStart(6),
        '│',
        (r.burst ? fmt(r.burst.lastMs) : '—').padStart(17),
        (r.burst && ref.burst ? ratio(r.burst.lastMs, ref.burst.lastMs) : '').padStart(6),
        '│',
        fmt(MiB(r.rssKiB), 1).padStart(7),
        ratio(r.rssKiB, ref.rssKiB).padStart(6),
        '│',
        fmt(r.idleCpuPercent, 2).padStart(10),
        ratio(r.idleCpuPercent, ref.idleCpuPercent).padStart(7),
        '│',
        fmt(MiB(r.programsRssKiB), 0).padStart(20),
      ].join(' '),
    );
  }
  for (const s of skips) lines.push(`${s.key.padEnd(26)} skipped: ${s.why}`);
  return lines.join('\n');
}

function partsTable(rows) {
  const lines = [];
  const head = `${'restart, medians in ms'.padEnd(26)} ${'kill → new node'.padStart(15)} ${'(delay + beyond)'.padStart(17)} ${'node boot'.padStart(9)} ${'→ listening'.padStart(11)} ${'→ seen'.padStart(7)} │ ${'total'.padStart(6)}`;
  lines.push(head);
  lines.push('─'.repeat(head.length));
  for (const r of rows) {
    const p = r.restart?.parts;
    if (!p) continue;
    lines.push(
      `${r.label.padEnd(26)} ${fmt(p.toNodeMs, 1).padStart(15)} ${`(${fmt(r.restart.restartDelayMs)} + ${fmt(r.restart.spawnOverheadMs, 1)})`.padStart(17)} ${fmt(p.bootMs, 1).padStart(9)} ${fmt(p.toListenMs, 1).padStart(11)} ${fmt(p.toSeenMs, 1).padStart(7)} │ ${fmt(r.restart.medianMs, 1).padStart(6)}`,
    );
    if (p.toExitLoggedMs !== undefined)
      lines.push(`${''.padEnd(26)}   from the agent's log: kill → exit logged ${fmt(p.toExitLoggedMs, 1)}, exit logged → state=starting logged ${fmt(p.exitToStartingMs, 1)} (100 ms of it is the first-restart delay of SPEC §5)`);
  }
  return lines.join('\n');
}

/** The four figures side by side: daemon RSS, idle CPU without and with probes, crash → the new process exists. */
function summaryTable(rows) {
  const probed = rows.find((r) => r.key === 'keystone-probed');
  const lines = [];
  const head = `${'supervisor'.padEnd(26)} ${'daemon RSS MiB'.padStart(14)} ${'idle CPU %'.padStart(10)} ${'idle CPU %, tcp /10 s'.padStart(21)} ${'crash → new process ms'.padStart(22)} ${'(delay + beyond, p50)'.padStart(22)}`;
  lines.push(head);
  lines.push('─'.repeat(head.length));
  for (const r of rows.filter((x) => x.key !== 'keystone-probed')) {
    const rs = r.restart;
    lines.push(
      [
        `${r.label}${r.version ? ` ${r.version}` : ''}`.padEnd(26),
        fmt(MiB(r.rssKiB), 1).padStart(14),
        fmt(r.idleCpuPercent, 2).padStart(10),
        (r.key === 'keystone' && probed ? fmt(probed.idleCpuPercent, 2) : 'no probes').padStart(21),
        fmt(rs?.parts?.toNodeMs, 1).padStart(22),
        (rs ? `(${fmt(rs.restartDelayMs)} + ${fmt(rs.spawnOverheadMs, 1)})` : '').padStart(22),
      ].join(' '),
    );
  }
  return lines.join('\n');
}

// ─── main ───────────────────────────────────────────────────────────────────────────────────────────────

const work = mkdtempSync(join(tmpdir(), 'keystone-bench-supervision-'));
// The components run as an unprivileged user, who must traverse the work directory to reach theirs (mkdtemp makes it 0700).
chmodSync(work, 0o755);
cleanUpOnSignal(work, () => rmSync(work, { recursive: true, force: true }));
const others = othersCpu(work);
const loadBefore = load1();
const started = performance.now();
try {
  const standIn = writeStandIn(join(work, 'bin'));
  const skips = [];
  const sups = [];
  for (const key of only) {
    if (key === 'keystone') sups.push(keystone(work, standIn, { probed: false }));
    if (key === 'keystone-probed') sups.push(keystone(work, standIn, { probed: true }));
    if (key === 'supervisord') {
      const a = ensureSupervisord();
      if (a.ok) sups.push(supervisord(work, standIn));
      else skips.push({ key, why: a.why });
    }
    if (key === 'pm2') {
      const a = ensurePm2();
      if (a.ok) sups.push(pm2(work, standIn));
      else skips.push({ key, why: a.why });
    }
  }
  const rows = [];
  for (const sup of sups) {
    try {
      rows.push(await measure(sup, work));
    } catch (e) {
      process.stderr.write(`failed: ${e.message}\n`);
      skips.push({ key: sup.key, why: `failed: ${e.message}` });
    }
  }
  const loadAfter = load1();
  const othersPercent = others.percent();
  const ks = rows.find((r) => r.key === 'keystone');
  const rivals = rows.filter((r) => r.key === 'supervisord' || r.key === 'pm2');

  console.log(
    `\nsupervision benchmark — node ${process.version}, ${machine().cpu.count} × ${machine().cpu.model ?? 'cpu'}; ${N} programs (node stand-in, no start delay), ` +
      `${KILLS} kill -9 per supervisor, ${IDLE_S} s idle window; RSS and CPU of the supervisor process itself`,
  );
  console.log('');
  console.log(table(rows, skips));
  console.log('');
  console.log(partsTable(rows));
  console.log('');
  console.log(summaryTable(rows));
  if (ks && rivals.length) {
    const faster = ks.restart && rivals.every((o) => o.restart && ks.restart.medianMs < o.restart.medianMs);
    const pm = rivals.find((o) => o.key === 'pm2');
    console.log('');
    console.log(
      `verdict: faster restart than ${rivals.map((o) => o.key).join(' and ')}: ${faster ? 'yes' : 'no'} (${rivals.map((o) => `${o.key} ${fmt(o.restart?.medianMs)} ms`).join(', ')}, keystone ${fmt(ks.restart?.medianMs)} ms)` +
        (pm ? `; less memory than PM2: ${ks.rssKiB < pm.rssKiB ? 'yes' : 'no'} (${fmt(MiB(ks.rssKiB), 1)} vs ${fmt(MiB(pm.rssKiB), 1)} MiB)` : ''),
    );
    if (ks.burst)
      console.log(
        `burst: ${BURST} programs killed at once are all back after ${fmt(ks.burst.lastMs)} ms under keystone (first ${fmt(ks.burst.firstMs)} ms), ` +
          rivals.filter((o) => o.burst).map((o) => `${fmt(o.burst.lastMs)} ms under ${o.key} (first ${fmt(o.burst.firstMs)})`).join(', '),
      );
  }
  for (const r of rows) {
    if (r.stillSupervised !== N) console.log(`warning: ${r.label}: only ${r.stillSupervised} of ${N} programs were the same processes at the end of the idle window`);
    if (r.stragglersKilled) console.log(`warning: ${r.label}: ${r.stragglersKilled} process(es) outlived the supervisor's stop and were killed`);
    if (r.restart?.failed) console.log(`warning: ${r.label}: ${r.restart.failed} kill(s) never came back`);
  }
  const note = busyNote(othersPercent, loadBefore, loadAfter);
  if (note) console.log(note);

  ensureDir(join(benchDir, 'results'));
  writeFileSync(
    resultsFile,
    JSON.stringify(
      {
        ...resultsHead('supervision', { loadBefore, loadAfter, othersPercent }),
        programs: N,
        kills: KILLS,
        burst: BURST,
        gapMs: GAP_MS,
        idleSeconds: IDLE_S,
        measures: {
          restart: 'kill -9 of a program → a new pid answers on its port (bench polls every 2 ms); median over the kills',
          burst: 'kill -9 of several programs at the same moment → each answers again (first and last)',
          rssKiB: 'VmRSS of the supervisor process (agent / supervisord / PM2 God daemon): the median of one sample a second over the idle window',
          idleCpuPercent: 'utime+stime of the supervisor process over the idle window, % of one core',
          programsRssKiB: 'the supervised programs\' VmRSS added up',
          programsIdleCpuPercent:
            'the programs\' own CPU over the idle window, % of one core: not printed, because it mostly shows how recently they started (node does a few GCs some 10-20 s after start-up), not the supervisor',
        },
        rows,
        skipped: skips,
        benchSeconds: +((performance.now() - started) / 1000).toFixed(1),
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`\nwrote ${resultsFile} (bench took ${fmt((performance.now() - started) / 1000)} s)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
