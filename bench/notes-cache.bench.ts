// Notes cache soak (issue 28, finding 5): does `<state-dir>/notes.git` stay bounded while a device reports at every
// poll? Anyone who can push makes every device report at every poll (an unsigned commit is reported `error`), so the
// bench makes --reports reports, one note each on a commit of its own (the worst case: one `error` per poll), through
// the Git notes reporter against a real `git http-backend` (src/dev/git-http-server.ts), and prints the size of the
// cache at each --checkpoints: bytes on disk (allocated blocks, as `du`), files, the peak since the last checkpoint,
// ms per report, and the bytes each report's push carried. The aim: the cache's peak under --bound-mib at every
// checkpoint. At the end the server's notes ref is read back with the git CLI: every note there, in the fanout layout.
//
// The reference, with --before-rev REV: the same reports through the reporter of REV (built from `git archive` in a
// temporary directory) for --before-reports, and a fit of size = a·n² + b·n through its checkpoints, extrapolated to
// --reports (the old cache wrote the whole flat notes tree as a new loose object each report, and kept them all).
//
// Run with `npm run bench -- notes-cache` (builds first; ~13 min for 10,000 reports on 2 busy cores), e.g.
//   npm run bench -- notes-cache --reports 1000 --checkpoints 250,500,1000          (a short run)
//   npm run bench -- notes-cache --before-rev c4b58da --before-reports 2000         (with the figure of before)
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { load1, machine } from './lib/machine.js';
import { benchDir, ensureDir, projectDir } from './lib/paths.js';
import { fmt } from './lib/stats.js';

const { values: opts } = parseArgs({
  options: {
    reports: { type: 'string', default: '10000' },
    checkpoints: { type: 'string', default: '1000,5000,10000' },
    'bound-mib': { type: 'string', default: '8' },
    'before-rev': { type: 'string' },
    'before-reports': { type: 'string', default: '2000' },
  },
  strict: false,
});
const REPORTS = Number(opts.reports);
const CHECKPOINTS = String(opts.checkpoints)
  .split(',')
  .map(Number)
  .filter((n) => n > 0 && n <= REPORTS);
if (!CHECKPOINTS.includes(REPORTS)) CHECKPOINTS.push(REPORTS);
const BOUND = Number(opts['bound-mib']) * 1024 * 1024;
const MiB = (b: number | undefined): string => fmt(b! / 1024 / 1024, 2);
const commitOf = (i: number): string => createHash('sha1').update(`bench commit ${i}`).digest('hex');

/** Bytes on disk (allocated blocks) and files below `dir`. */
function du(dir: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const sub = du(p);
      bytes += sub.bytes;
      files += sub.files;
    } else {
      bytes += statSync(p).blocks * 512;
      files++;
    }
  }
  return { bytes, files };
}

/** `n` reports through the reporter of `dist`, against a fresh server; a row per checkpoint. */
interface Row {
  reports: number;
  cacheBytes: number;
  cacheFiles: number;
  peakBytes: number;
  msPerReport: number;
  pushBytesPerReport: number;
  serverBytes: number;
}

/** `n` reports through the reporter of `dist`, against a fresh server; a row per checkpoint. */
async function soak(
  dist: string,
  n: number,
  checkpoints: number[],
  label: string,
): Promise<{ rows: Row[]; bare: string }> {
  const { startGitHttpServer } = (await import(
    join(projectDir, 'dist', 'dev', 'git-http-server.js')
  )) as typeof import('../dist/dev/git-http-server.js');
  // `dist` may be another revision's (--before-rev): its types are today's.
  // The reporter moved from status/ to report/ (issue 34): an older revision's build has it in status/.
  const reporterFile =
    ['report', 'status'].map((room) => join(dist, room, 'git-notes-reporter.js')).find((f) => existsSync(f)) ??
    join(dist, 'report', 'git-notes-reporter.js');
  const { GitNotesReporter } = (await import(reporterFile)) as typeof import('../dist/report/git-notes-reporter.js');
  const work = mkdtempSync(join(tmpdir(), 'keystone-notes-bench-'));
  const server = await startGitHttpServer({ root: join(work, 'srv') });
  try {
    const bare = server.createRepository('reports');
    const cacheDir = join(work, 'state', 'notes.git');
    const reporter = new GitNotesReporter({ repository: server.url('reports'), cacheDir });
    const rows: Row[] = [];
    let peak = 0;
    let from = 0;
    let t0 = performance.now();
    console.log(`\n${label}: ${n} reports, one note each`);
    console.log(
      `  ${'reports'.padStart(7)} ${'notes.git MiB'.padStart(13)} ${'files'.padStart(6)} ${'peak MiB'.padStart(9)} ${'ms/report'.padStart(9)} ${'push B/report'.padStart(13)} ${'server MiB'.padStart(10)}`,
    );
    for (let i = 1; i <= n; i++) {
      await reporter.deliver({
        commit: commitOf(i),
        state: 'error',
        description: 'rejected: unsigned',
        context: 'keystone/bench-1',
        at: Date.now(),
      });
      peak = Math.max(peak, du(cacheDir).bytes);
      if (!checkpoints.includes(i)) continue;
      const pushes = server.requests
        .slice(from)
        .filter((r) => r.method === 'POST' && r.path.endsWith('/git-receive-pack'));
      const row = {
        reports: i,
        cacheBytes: du(cacheDir).bytes,
        cacheFiles: du(cacheDir).files,
        peakBytes: peak,
        msPerReport: +((performance.now() - t0) / (i - (rows.at(-1)?.reports ?? 0))).toFixed(1),
        pushBytesPerReport: Math.round(pushes.reduce((s, r) => s + r.received, 0) / Math.max(1, pushes.length)),
        serverBytes: du(bare).bytes,
      };
      rows.push(row);
      console.log(
        `  ${String(i).padStart(7)} ${MiB(row.cacheBytes).padStart(13)} ${String(row.cacheFiles).padStart(6)} ${MiB(peak).padStart(9)} ${fmt(row.msPerReport, 1).padStart(9)} ${String(row.pushBytesPerReport).padStart(13)} ${MiB(row.serverBytes).padStart(10)}`,
      );
      [peak, from, t0] = [0, server.requests.length, performance.now()];
    }
    return { rows, bare };
  } finally {
    await server.stop();
    if (label !== 'keystone') rmSync(work, { recursive: true, force: true });
    else process.on('exit', () => rmSync(work, { recursive: true, force: true }));
  }
}

/** The server's notes ref read back with git: how many notes its tip holds, the widest tree level, a note shown. */
function readBack(bare: string, n: number) {
  const ref = 'refs/notes/keystone-devices/bench-1';
  const g = (...args: string[]) =>
    execFileSync('git', ['--git-dir', bare, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const notes = g('ls-tree', '-r', '--name-only', ref).trim().split('\n').length;
  const top = g('ls-tree', ref).trim().split('\n').length;
  const last = g('notes', '--ref', ref, 'show', commitOf(n)).trim();
  return { notes, topLevelEntries: top, lastNote: last };
}

/** `dist/` of `rev`, built in a temporary directory. */
function buildRev(rev: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'keystone-before-'));
  execFileSync('sh', ['-c', `git -C ${JSON.stringify(projectDir)} archive ${rev} | tar -x -C ${JSON.stringify(dir)}`]);
  symlinkSync(join(projectDir, 'node_modules'), join(dir, 'node_modules'));
  const r = spawnSync(join(projectDir, 'node_modules', '.bin', 'tsc'), ['-b', 'tsconfig.build.json'], {
    cwd: dir,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`building ${rev}: ${r.stdout}${r.stderr}`);
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'dist');
}

/** size = a·n² + b·n through the last two checkpoints, at `n`. */
function extrapolate(rows: Row[], n: number): number | undefined {
  const [p, q] = rows.slice(-2);
  if (!p || !q) return undefined;
  const b = (q.cacheBytes / q.reports ** 2 - p.cacheBytes / p.reports ** 2) / (1 / q.reports - 1 / p.reports);
  const a = (q.cacheBytes - b * q.reports) / q.reports ** 2;
  return Math.round(a * n * n + b * n);
}

const started = performance.now();
const loadBefore = load1();
let before: { rev: string; rows: Row[]; extrapolatedBytes: Record<number, number | undefined> } | undefined;
const beforeRev = opts['before-rev'] as string | undefined;
if (beforeRev) {
  const n = Number(opts['before-reports']);
  const points = [Math.round(n / 4), Math.round(n / 2), n];
  const { rows } = await soak(buildRev(beforeRev), n, points, `before (${beforeRev})`);
  before = { rev: beforeRev, rows, extrapolatedBytes: { [REPORTS]: extrapolate(rows, REPORTS) } };
  console.log(
    `  fit a·n² + b·n through ${points.slice(-2).join(' and ')}: ${MiB(before.extrapolatedBytes[REPORTS])} MiB at ${REPORTS} reports`,
  );
}
const { rows, bare } = await soak(join(projectDir, 'dist'), REPORTS, CHECKPOINTS, 'keystone');
const back = readBack(bare, REPORTS);
const worst = Math.max(...rows.map((r) => r.peakBytes));
const aims = { peakUnderBound: worst <= BOUND, everyNoteOnTheServer: back.notes === REPORTS };
console.log(
  `\nthe server's notes ref: ${back.notes} notes (of ${REPORTS}), ${back.topLevelEntries} entries at its top level; the last one: ${back.lastNote}`,
);
console.log(
  `aims: the cache under ${MiB(BOUND)} MiB at every report (peak ${MiB(worst)} MiB) ${aims.peakUnderBound ? 'met' : 'MISSED'}; every note on the server ${aims.everyNoteOnTheServer ? 'met' : 'MISSED'}`,
);
if (loadBefore > 1 || load1() > 1)
  console.log(
    `note: load average ${fmt(loadBefore, 2)} before, ${fmt(load1(), 2)} after: ms per report is noisy, bytes are not`,
  );

const resultsFile = join(benchDir, 'results', 'notes-cache.json');
ensureDir(join(benchDir, 'results'));
writeFileSync(
  resultsFile,
  JSON.stringify(
    {
      bench: 'notes-cache',
      date: new Date().toISOString(),
      ...machine(),
      loadAverage1m: { before: loadBefore, after: load1() },
      reports: REPORTS,
      boundBytes: BOUND,
      units: {
        cacheBytes: 'bytes on disk (allocated blocks) of notes.git at the checkpoint',
        peakBytes: 'the largest after any report since the previous checkpoint',
        pushBytesPerReport: 'mean body of the receive-pack POSTs',
      },
      rows,
      readBack: back,
      before,
      aims,
      benchSeconds: Math.round((performance.now() - started) / 1000),
    },
    null,
    2,
  ) + '\n',
);
console.log(`\nwrote ${resultsFile}`);
process.exitCode = Object.values(aims).every(Boolean) ? 0 : 1;
