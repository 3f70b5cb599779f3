// Benchmark of supervision: the same 50 programs supervised in turn by the Keystone agent, supervisord (Debian's
// `supervisor`) and PM2 (npm), measured in one run. Run by hand (`npm run bench -- supervision`, which builds
// first); it asserts no timing, it reports.
//
// The programs: 50 copies of the stand-in of lib/stand-in.ts (`node stand-in.mjs --port P --delay 0`), independent
// of each other, restart policy "always" everywhere. For each supervisor:
//   restart    kill -9 one supervised program and time until a new process (another pid) answers on its port,
//              polled every 2 ms from the bench; 20 kills spread over the programs, one at a time, each once
//              the supervisor has settled the previous restart (the agent logged state=running; supervisord
//              moved it to RUNNING after `startsecs`, 1 s: a kill before that is a failed start, handled with
//              backoff) and --gap ms more; the median is reported. Each kill is split with the programs' own stamps
//              (lib/stand-in.ts): kill → the new node process exists (the supervisor notices the exit, decides and
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
// Every supervisor starts with the same small environment (lib/processes.ts cleanEnv: PATH, HOME, LANG), which
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
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { busyNote, load1, machine, othersCpu, resultsHead } from './lib/machine.js';
import { benchDir, ensureDir } from './lib/paths.js';
import { cleanUpOnSignal } from './lib/processes.js';
import { writeStandIn } from './lib/stand-in.js';
import { fmt } from './lib/stats.js';
import { ensurePm2, ensureSupervisord } from './supervision/install.js';
import { measure, type Row } from './supervision/measure.js';
import { BURST, GAP_MS, IDLE_S, KILLS, MiB, N, only, resultsFile } from './supervision/options.js';
import { keystone, pm2, supervisord, type Supervisor } from './supervision/supervisors.js';
import { partsTable, summaryTable, table } from './supervision/tables.js';

const work = mkdtempSync(join(tmpdir(), 'keystone-bench-supervision-'));
// The components run as an unprivileged user, who must traverse the work directory to reach theirs (mkdtemp makes it 0700).
chmodSync(work, 0o755);
cleanUpOnSignal(work, () => rmSync(work, { recursive: true, force: true }));
const others = othersCpu(work);
const loadBefore = load1();
const started = performance.now();
try {
  const standIn = writeStandIn(join(work, 'bin'));
  const skips: { key: string; why: string }[] = [];
  const sups: Supervisor[] = [];
  for (const key of only) {
    if (key === 'keystone') sups.push(keystone(work, standIn, { probed: false }));
    if (key === 'keystone-probed') sups.push(keystone(work, standIn, { probed: true }));
    if (key === 'supervisord') {
      const a = ensureSupervisord();
      if (a.ok) sups.push(supervisord(work, standIn));
      else skips.push({ key, why: (a as { why: string }).why });
    }
    if (key === 'pm2') {
      const a = ensurePm2();
      if (a.ok) sups.push(pm2(work, standIn));
      else skips.push({ key, why: (a as { why: string }).why });
    }
  }
  const rows: Row[] = [];
  for (const sup of sups) {
    try {
      rows.push(await measure(sup, work));
    } catch (e) {
      process.stderr.write(`failed: ${(e as Error).message}\n`);
      skips.push({ key: sup.key, why: `failed: ${(e as Error).message}` });
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
    const faster = ks.restart && rivals.every((o) => o.restart && ks.restart!.medianMs! < o.restart.medianMs!);
    const pm = rivals.find((o) => o.key === 'pm2');
    console.log('');
    console.log(
      `verdict: faster restart than ${rivals.map((o) => o.key).join(' and ')}: ${faster ? 'yes' : 'no'} (${rivals.map((o) => `${o.key} ${fmt(o.restart?.medianMs)} ms`).join(', ')}, keystone ${fmt(ks.restart?.medianMs)} ms)` +
        (pm
          ? `; less memory than PM2: ${ks.rssKiB! < pm.rssKiB! ? 'yes' : 'no'} (${fmt(MiB(ks.rssKiB!), 1)} vs ${fmt(MiB(pm.rssKiB!), 1)} MiB)`
          : ''),
    );
    if (ks.burst)
      console.log(
        `burst: ${BURST} programs killed at once are all back after ${fmt(ks.burst.lastMs)} ms under keystone (first ${fmt(ks.burst.firstMs)} ms), ` +
          rivals
            .filter((o) => o.burst)
            .map((o) => `${fmt(o.burst!.lastMs)} ms under ${o.key} (first ${fmt(o.burst!.firstMs)})`)
            .join(', '),
      );
  }
  for (const r of rows) {
    if (r.stillSupervised !== N)
      console.log(
        `warning: ${r.label}: only ${r.stillSupervised} of ${N} programs were the same processes at the end of the idle window`,
      );
    if (r.stragglersKilled)
      console.log(
        `warning: ${r.label}: ${r.stragglersKilled} process(es) outlived the supervisor's stop and were killed`,
      );
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
          restart:
            'kill -9 of a program → a new pid answers on its port (bench polls every 2 ms); median over the kills',
          burst: 'kill -9 of several programs at the same moment → each answers again (first and last)',
          rssKiB:
            'VmRSS of the supervisor process (agent / supervisord / PM2 God daemon): the median of one sample a second over the idle window',
          idleCpuPercent: 'utime+stime of the supervisor process over the idle window, % of one core',
          programsRssKiB: "the supervised programs' VmRSS added up",
          programsIdleCpuPercent:
            "the programs' own CPU over the idle window, % of one core: not printed, because it mostly shows how recently they started (node does a few GCs some 10-20 s after start-up), not the supervisor",
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
