// npm run fuzz [-- --runs N] [--target NAME…] [--seed S] [--path P] [--replay FILE]
//
// Runs every fuzz target of reliability/fuzz/ (one per parser of outside input: recipes, plans, fleet files and their
// resolution, SHA256SUMS, minisign keys and signatures, tar and zip unpacking, the API, the GitHub webhook, Git
// pkt-lines and ref advertisements, thin packs, rollout refs, status notes, the agent's configuration file) with N
// inputs each (--runs N, or 100,000, fewer for the few slow targets' defaultRuns so that the whole stays near half an
// hour): arbitrary bytes, documents built from each format's grammar and mutations of the seeds in
// reliability/fuzz/corpus/<target>/. Each input must come back within its parser's contract (a value, or the parser's
// own coded error) within 1 s. Prints one line per target and a total, writes reliability/results/fuzz.json (the
// latest run of each target), and exits 1 on any finding, with the counterexample saved under
// reliability/results/findings/ and the command that replays it. --seed and --path replay fast-check's run (a random
// seed is printed when none is given); --replay FILE runs one saved input (with --target), e.g. a corpus crash.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runnerImport } from 'vite';

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = dirname(here);
const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    target: { type: 'string', multiple: true, default: [] },
    seed: { type: 'string' },
    path: { type: 'string' },
    replay: { type: 'string' },
  },
});
const FULL_RUNS = 100_000;
const runs = values.runs === undefined ? undefined : Number(values.runs);
if (runs !== undefined && (!Number.isSafeInteger(runs) || runs < 1)) {
  console.error(`fuzz: --runs must be a whole number ≥ 1, not ${values.runs}`);
  process.exit(2);
}
const seed = values.seed === undefined ? Date.now() ^ (process.pid << 8) : Number(values.seed);
if (!Number.isSafeInteger(seed)) {
  console.error(`fuzz: --seed must be an integer, not ${values.seed}`);
  process.exit(2);
}

const load = async (file) =>
  (await runnerImport(join(here, 'fuzz', file), { configFile: false, root: projectRoot, logLevel: 'error' })).module;
const { TARGETS } = await load('targets.ts');
const { fuzzTarget, checkOnce, preview } = await load('run-fuzz.ts');

const wanted = values.target
  .flatMap((t) => t.split(','))
  .map((t) => t.trim())
  .filter(Boolean);
const unknown = wanted.filter((w) => !TARGETS.some((t) => t.name === w));
if (unknown.length) {
  console.error(`fuzz: no target ${unknown.join(', ')}; targets: ${TARGETS.map((t) => t.name).join(', ')}`);
  process.exit(2);
}
const selected = wanted.length ? TARGETS.filter((t) => wanted.includes(t.name)) : TARGETS;

if (values.replay !== undefined) {
  if (selected.length !== 1) {
    console.error('fuzz: --replay needs exactly one --target');
    process.exit(2);
  }
  const [t] = selected;
  const input = new Uint8Array(readFileSync(values.replay));
  await t.setup?.();
  try {
    const { outcome, ms } = await checkOnce(t, input);
    console.log(`${t.name}: ${outcome} in ${ms.toFixed(1)} ms: ${preview(input)}`);
  } catch (e) {
    console.error(`${t.name}: FINDING on ${preview(input)}\n${e?.stack ?? e}`);
    process.exitCode = 1;
  } finally {
    await t.teardown?.();
  }
  process.exit();
}

/** --runs for every target; without it 100,000 each, fewer for the slow ones (their defaultRuns). */
const runsOf = (t) => runs ?? t.defaultRuns ?? FULL_RUNS;
const fewer = selected.filter((t) => runsOf(t) < FULL_RUNS).map((t) => `${t.name} ${runsOf(t)}`);
const inputsText =
  runs !== undefined ? `${runs} inputs` : `${FULL_RUNS} inputs${fewer.length ? ` (${fewer.join(', ')})` : ''}`;
const findingsDir = join(here, 'results', 'findings');
const width = Math.max(...selected.map((t) => t.name.length));
const reports = [];
const started = Date.now();
console.log(`fuzz: ${selected.length} targets × ${inputsText}, seed ${seed}`);
for (const t of selected) {
  const onProgress = (n, s) => process.stderr.write(`  ${t.name}: ${n} inputs, ${Math.round(s)} s\n`);
  const r = await fuzzTarget(t, {
    runs: runsOf(t),
    seed,
    findingsDir,
    onProgress,
    ...(values.path !== undefined && { path: values.path }),
  });
  reports.push(r);
  const rate = Math.round(r.inputs / Math.max(r.seconds, 0.001));
  console.log(
    `${t.name.padEnd(width)}  ${String(r.inputs).padStart(7)} inputs (${r.accepted} accepted, ${r.refused} refused)  uncaught ${r.uncaught}  over 1 s ${r.overDeadline}  slowest ${r.slowestMs} ms  heap ${r.heap.growthMb < 0 ? '' : '+'}${r.heap.growthMb} MB (peak ${r.heap.peakMb} MB)  ${r.seconds} s (${rate}/s)`,
  );
  if (r.retriedOverDeadline)
    console.log(`  ${r.retriedOverDeadline} inputs over 1 s once, under it when run again (machine load), not hangs`);
  for (const [id, n] of Object.entries(r.knownOpen))
    console.log(`  known open finding ${id}: ${n} inputs (see the target's knownOpen)`);
  if (r.finding) {
    const f = r.finding;
    console.log(`  FINDING (${f.kind}): ${f.message}`);
    console.log(`  input: ${f.preview}`);
    if (f.file) console.log(`  saved: ${f.file}  (replay: npm run fuzz -- --target ${t.name} --replay ${f.file})`);
    console.log(
      `  replay the run: npm run fuzz -- --target ${t.name} --runs ${runsOf(t)} --seed ${f.seed} --path ${f.path}`,
    );
  }
}
const uncaught = reports.reduce((n, r) => n + r.uncaught, 0);
const over = reports.reduce((n, r) => n + r.overDeadline, 0);
console.log(
  `fuzz: ${reports.length} targets × ${inputsText}, ${uncaught} uncaught, ${over} over 1 s (${Math.round((Date.now() - started) / 1000)} s)`,
);

// The latest run of each target: a run of some targets keeps the others' figures (each says when and how it ran).
const out = join(here, 'results', 'fuzz.json');
mkdirSync(dirname(out), { recursive: true });
let previous = [];
try {
  previous = JSON.parse(readFileSync(out, 'utf8')).targets ?? [];
} catch {
  // none yet, or unreadable: start afresh
}
const date = new Date().toISOString();
const latest = new Map(previous.map((r) => [r.target, r]));
for (const r of reports) latest.set(r.target, { ...r, date, node: process.version });
const ordered = TARGETS.flatMap((t) => (latest.has(t.name) ? [latest.get(t.name)] : []));
writeFileSync(out, JSON.stringify({ updated: date, targets: ordered }, null, 2) + '\n');
process.exit(uncaught + over > 0 ? 1 : 0);
