// Benchmark of `keystonectl apply-dry PLAN --json` on synthetic repositories of 1,000, 10,000 and 100,000 components.
// The aim (issue 16): apply-dry of 10,000 components in at most 1 s in-process, linear up to 100,000.
// Run by hand (`npm run bench`, which builds first); it asserts no timing, it reports.
//
// Each generated repository is signed (keystonectl keygen + sign, untimed), so apply-dry runs as on a
// device: verify the signature and every digest, then load, validate, resolve and diff. For each N, in
// one process, it times:
//   apply-dry           the whole command in-process (main() of dist/cli/keystonectl.js with --trusted-key,
//                       stdout into a string);
//   apply-dry unsigned  the same with --allow-unsigned: the difference is what verification costs;
//   parse floor         reading every file and parsing it with smol-toml: the minimum any implementation must do;
//   stages              parsePlan + parseRecipe on texts already read, and resolveDesiredState on recipes
//                       already parsed, to show where the time goes;
//   pipeline            what apply-dry does in-process minus argument parsing and signature checks, at every N:
//                       loadRevision (read, parse, validate, resolve) + diff against the empty state + the --json
//                       text. Above ~14,000 components the plan passes the 1 MiB document cap and keystonectl refuses
//                       it, so there the bench reads through a reader without the cap and times this measure (and the
//                       stages) only: it is what shows linearity from 1,000 to 100,000;
//   core diff           the pure reconcile: diff(desired, actualFromDesired(changed variant)), ~1% bumped.
// Warm-up once, then the median of several runs. The measures take turns run by run, so a machine that
// gets busier half-way (other work on a shared box) colours them all alike rather than one of them.
// Then one cold run as a child process (`node bin/keystonectl.js apply-dry …`), start-up included.
// Figures go to stdout as a table and to bench/results/apply-dry.json.
//
// Options: --sizes 1000,10000,100000   --runs K (runs per measure at the largest N; smaller N get 2K+1)   --seed S
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parse as parseToml } from 'smol-toml';
import { main } from '../dist/cli/keystonectl.js';
import { resolveDesiredState } from '../dist/core/desired-state.js';
import { actualFromDesired, diff, EMPTY_ACTUAL } from '../dist/core/diff.js';
import { parsePlan } from '../dist/core/plan.js';
import { parseRecipe } from '../dist/core/recipe.js';
import { DirectoryReader } from '../dist/source/directory-reader.js';
import { loadRevision } from '../dist/load/load-revision.js';
import { MAX_DOCUMENT_BYTES } from '../dist/source/repo-reader.js';
import { generateRepo } from './generate-repo.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'bin', 'keystonectl.js');
const resultsFile = join(here, 'results', 'apply-dry.json');

/** Per-component growth from the smallest to the largest N at or under this counts as linear (noise, GC and caches included). */
const LINEAR_LIMIT = 1.3;
const BUDGET_MS = 1000;

const { values: opts } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000,100000' },
    runs: { type: 'string', default: '3' },
    seed: { type: 'string', default: '1' },
  },
});
const sizes = opts.sizes.split(',').map((s) => Number(s.trim()));
const baseRuns = Number(opts.runs);
const seed = Number(opts.seed);
if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(baseRuns) || baseRuns < 1) {
  console.error('usage: node bench/apply-dry.bench.mjs [--sizes 1000,10000,100000] [--runs 3] [--seed 1]');
  process.exit(2);
}

const gc = () => globalThis.gc?.();
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** CPU time (user + system, every thread of the process) of each timed run, by measure: steadier than wall time on a busy machine. */
const cpuMs = {};

/** Times `fn` once in wall-clock ms, after a GC that is not timed; its CPU time goes to cpuMs[key]. */
async function timeOnce(fn, key) {
  gc();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (key) (cpuMs[key] ??= []).push((c.user + c.system) / 1000);
  return ms;
}

/** Warms every measure up once (but those already `warm`), then runs them in turns `runs` times. Returns every run in ms, by measure. */
async function timeInTurns(measures, runs, warm = []) {
  for (const [key, fn] of Object.entries(measures)) if (!warm.includes(key)) await fn();
  const out = Object.fromEntries(Object.keys(measures).map((k) => [k, []]));
  for (let k = 0; k < runs; k++) for (const [key, fn] of Object.entries(measures)) out[key].push(await timeOnce(fn, key));
  return out;
}

/** Runs keystonectl in-process, stdout and stderr into strings. */
async function keystonectl(args, cwd) {
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: { write: (s) => void (stdout += s) },
    stderr: { write: (s) => void (stderr += s) },
    cwd,
    env: {},
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

async function mustRun(args, cwd) {
  const r = await keystonectl(args, cwd);
  if (r.code !== 0) throw new Error(`keystonectl ${args.join(' ')} exited ${r.code} in ${cwd}:\n${r.stderr.slice(0, 2000)}${r.stdout.slice(0, 2000)}`);
  return r;
}

function parseFloor(repo, files) {
  let keys = 0;
  for (const f of files) keys += Object.keys(parseToml(readFileSync(join(repo, f), 'utf8'))).length;
  return keys;
}

/** A directory reader without the document cap, for plans of more than ~14,000 components (bench only). */
function uncappedReader(repo) {
  const dir = new DirectoryReader(repo);
  return { label: dir.label, readFile: (path) => dir.readFile(path, Number.MAX_SAFE_INTEGER) };
}

/** apply-dry's work in-process, without argument parsing and signatures: load, diff against the empty state, the --json text. */
async function pipeline(repo) {
  const r = await loadRevision(uncappedReader(repo), 'plans/plan.toml');
  if (!r.ok) throw new Error(`loadRevision failed on ${repo}: ${JSON.stringify(r.diagnostics.slice(0, 3))}`);
  const { reasonCodes: _codes, ...plain } = diff(r.state, EMPTY_ACTUAL);
  return JSON.stringify({ plan: 'plans/plan.toml', repo, comparedWith: { kind: 'empty' }, ...plain }, null, 2).length;
}

async function load(repo) {
  const r = await loadRevision(uncappedReader(repo), 'plans/plan.toml');
  if (!r.ok) throw new Error(`loadRevision failed on ${repo}: ${JSON.stringify(r.diagnostics.slice(0, 3))}`);
  return r.state;
}

function coldRun(repo, trust) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [bin, 'apply-dry', 'plans/plan.toml', '--json', '--empty', ...trust], { cwd: repo, maxBuffer: 1 << 30, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`cold apply-dry exited ${r.status}: ${r.stderr.slice(0, 2000)}`);
  return ms;
}

async function benchSize(n, workDir, publicKey) {
  for (const k of Object.keys(cpuMs)) delete cpuMs[k];
  const runs = n === Math.max(...sizes) ? baseRuns : 2 * baseRuns + 1; // smaller sizes are cheap: a few more runs
  const trust = ['--trusted-key', publicKey];
  const signed = ['apply-dry', 'plans/plan.toml', '--json', '--empty', ...trust];
  const unsigned = ['apply-dry', 'plans/plan.toml', '--json', '--empty', '--allow-unsigned'];
  process.stderr.write(`N=${n}: generating${'…'} `);
  const base = generateRepo(join(workDir, `base-${n}`), { n, seed });
  const changed = generateRepo(join(workDir, `changed-${n}`), { n, seed, changed: true });
  // keystonectl refuses a plan over the document cap: above it, only the in-process pipeline and the stages are timed.
  const cli = readFileSync(join(base.root, base.plan)).length <= MAX_DOCUMENT_BYTES;
  let outputBytes;
  if (cli) {
    process.stderr.write('signing… ');
    await mustRun(['sign', '--key', publicKey.replace(/\.pub$/, '.key'), '--repo', base.root], workDir);
    // Correctness first (untimed, and the warm-up of both apply-dry measures): they succeed and print the whole plan.
    const first = await mustRun(signed, base.root);
    const printed = JSON.parse(first.stdout);
    if (printed.startOrder?.length !== n) throw new Error(`apply-dry printed ${printed.startOrder?.length} components to start, expected ${n}`);
    outputBytes = first.stdout.length;
    await mustRun(unsigned, base.root);
  }
  const printed = (await load(base.root)).startOrder.length;
  if (printed !== n) throw new Error(`the pipeline resolved ${printed} components, expected ${n}`);
  outputBytes ??= await pipeline(base.root);

  // The inputs of the stage measures, prepared untimed.
  const recipePaths = base.files.slice(1);
  const planText = readFileSync(join(base.root, base.plan), 'utf8');
  const recipeTexts = recipePaths.map((f) => readFileSync(join(base.root, f), 'utf8'));
  const parsedPlan = parsePlan(base.plan, planText);
  const parsedRecipes = new Map(recipePaths.map((f, k) => [f, parseRecipe(f, recipeTexts[k])]));
  if (!resolveDesiredState(parsedPlan, parsedRecipes).ok) throw new Error(`resolveDesiredState failed on ${base.root}`);

  process.stderr.write(`timing ${runs} rounds… `);
  const timed = await timeInTurns(
    {
      ...(cli && {
        applyDry: () => keystonectl(signed, base.root),
        unsigned: () => keystonectl(unsigned, base.root),
      }),
      pipeline: () => pipeline(base.root),
      floor: () => parseFloor(base.root, base.files),
      parse: () => {
        parsePlan(base.plan, planText);
        for (let k = 0; k < recipePaths.length; k++) parseRecipe(recipePaths[k], recipeTexts[k]);
      },
      resolve: () => resolveDesiredState(parsedPlan, parsedRecipes),
    },
    runs,
    ['applyDry', 'unsigned'],
  );

  process.stderr.write('core diff… ');
  const desired = await load(base.root);
  const actual = actualFromDesired(await load(changed.root));
  const reconcile = diff(desired, actual);
  const restarting = reconcile.startOrder.length;
  if (!(restarting >= changed.changed.length && restarting < n)) throw new Error(`diff restarts ${restarting} of ${n}; expected at least the ${changed.changed.length} bumped and not everything`);
  for (let k = 0; k < 3; k++) diff(desired, actual);
  const coreMs = [];
  for (let k = 0; k < 25; k++) coreMs.push(await timeOnce(() => diff(desired, actual), 'core'));

  let coldMs;
  if (cli) {
    process.stderr.write('cold child process… ');
    gc();
    coldMs = coldRun(base.root, trust);
  }
  process.stderr.write('done\n');

  return {
    n,
    cli,
    layers: desired.layers.length,
    edges: base.edges,
    hardEdges: base.hardEdges,
    bumped: changed.changed.length,
    diffRestarts: restarting,
    diffStops: reconcile.stopOrder.length,
    outputBytes,
    runs,
    measures: { ...timed, core: coreMs, ...(coldMs !== undefined && { cold: [coldMs] }) },
    cpuMs: { ...cpuMs },
  };
}

const MEASURES = [
  ['applyDry', 'apply-dry --json, in-process'],
  ['unsigned', '  the same, --allow-unsigned'],
  ['pipeline', 'pipeline in-process (load+diff+json)'],
  ['floor', 'parse floor (read + smol-toml)'],
  ['parse', '  stage: parsePlan + parseRecipe'],
  ['resolve', '  stage: resolveDesiredState'],
  ['core', 'core diff (1% bumped)'],
  ['cold', 'apply-dry, cold child process'],
];

function summarise(raw) {
  return raw.map((s) => {
    const floor = median(s.measures.floor);
    const measures = {};
    for (const [key] of MEASURES) {
      if (!s.measures[key]) continue;
      const ms = median(s.measures[key]);
      const cpu = s.cpuMs[key];
      measures[key] = {
        runsMs: s.measures[key].map((x) => +x.toFixed(3)),
        medianMs: +ms.toFixed(3),
        usPerComponent: +((ms * 1000) / s.n).toFixed(3),
        ratioToFloor: +(ms / floor).toFixed(3),
        ...(cpu && { cpuMedianMs: +median(cpu).toFixed(3), cpuUsPerComponent: +((median(cpu) * 1000) / s.n).toFixed(3) }),
      };
    }
    const { measures: _raw, cpuMs: _cpu, ...rest } = s;
    return { ...rest, measures };
  });
}

const fmt = (x, d = 1) => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const count = (x) => x.toLocaleString('en-US');

/** Every size side by side (— where a measure did not run at that size), then per-component growth from the smallest to the largest N. */
function table(summary, growth) {
  const small = summary[0];
  const large = summary[summary.length - 1];
  const cols = summary;
  const w = 37;
  const cell = (m) => (m ? `${fmt(m.medianMs).padStart(9)} ${fmt(m.usPerComponent).padStart(8)} ${`×${fmt(m.ratioToFloor, 2)}`.padStart(8)}` : `${'—'.padStart(9)} ${''.padStart(8)} ${''.padStart(8)}`);
  const lines = [];
  lines.push(`${''.padEnd(w)} ${cols.map((c) => `N = ${count(c.n)}`.padStart(17).padEnd(27)).join(' │ ')}${cols.length > 1 ? ' │ per-comp' : ''}`);
  lines.push(`${'measure'.padEnd(w)} ${cols.map(() => `${'total ms'.padStart(9)} ${'µs/comp'.padStart(8)} ${'÷floor'.padStart(8)}`).join(' │ ')}${cols.length > 1 ? ` │ ${count(large.n)}/${count(small.n)}` : ''}`);
  lines.push('─'.repeat(w + 1 + cols.length * 30 + (cols.length > 1 ? 16 : 0)));
  for (const [key, label] of MEASURES) {
    if (!cols.some((c) => c.measures[key])) continue;
    const row = `${label.padEnd(w)} ${cols.map((c) => cell(c.measures[key])).join(' │ ')}`;
    lines.push(cols.length > 1 ? `${row} │ ${growth[key] === undefined ? '—'.padStart(8) : fmt(growth[key], 2).padStart(8)}` : row);
  }
  return lines.join('\n');
}

const workDir = mkdtempSync(join(tmpdir(), 'keystone-bench-apply-dry-'));
const loadBefore = loadavg()[0];
try {
  const t0 = performance.now();
  await mustRun(['keygen', '--out', join(workDir, 'bench'), '--no-password'], workDir);
  const raw = [];
  for (const n of sizes) raw.push(await benchSize(n, workDir, join(workDir, 'bench.pub')));
  const summary = summarise(raw);
  /** Per-component growth of each measure from the smallest N to the largest N where it ran. */
  const growth = {};
  const cpuGrowth = {};
  const growthSpan = {};
  for (const [key] of MEASURES) {
    const ran = summary.filter((s) => s.measures[key]);
    if (ran.length < 2) continue;
    const [a, b] = [ran[0], ran[ran.length - 1]];
    growth[key] = +(b.measures[key].usPerComponent / a.measures[key].usPerComponent).toFixed(3);
    growthSpan[key] = { from: a.n, to: b.n };
    if (b.measures[key].cpuUsPerComponent) cpuGrowth[key] = +(b.measures[key].cpuUsPerComponent / a.measures[key].cpuUsPerComponent).toFixed(3);
  }
  const linearKey = growth.pipeline !== undefined ? 'pipeline' : 'applyDry';
  const linear = growth[linearKey] !== undefined ? growth[linearKey] <= LINEAR_LIMIT : undefined;
  const at10k = summary.find((s) => s.n === 10000 && s.measures.applyDry) ?? [...summary].reverse().find((s) => s.measures.applyDry);
  const under = at10k ? at10k.measures.applyDry.medianMs <= BUDGET_MS : undefined;
  const loadAfter = loadavg()[0];

  console.log(`\napply-dry benchmark — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, seed ${seed}`);
  for (const s of summary)
    console.log(
      `  N=${count(s.n)}: ${s.layers} layers, ${count(s.edges)} edges (${count(s.hardEdges)} hard); ${s.bumped} bumped → diff restarts ${count(s.diffRestarts)}; ` +
        `output ${fmt(s.outputBytes / 1024, 0)} KiB; median of ${s.runs} runs (core diff: ${s.measures.core.runsMs.length}; cold: ${s.cli ? 1 : 0})` +
        (s.cli ? '' : '; the plan is over the 1 MiB document cap, so keystonectl refuses it: pipeline and stages only'),
    );
  console.log('');
  console.log(table(summary, growth));
  console.log('');
  if (at10k) {
    const m = at10k.measures.applyDry;
    console.log(
      `aim: apply-dry of ${count(at10k.n)} components ≤ ${fmt(BUDGET_MS, 0)} ms in-process: ${under ? 'met' : 'not met'} — ${fmt(m.medianMs, 0)} ms (${fmt(m.usPerComponent, 1)} µs/component), ` +
        `×${fmt(m.ratioToFloor, 2)} the parse floor of ${fmt(at10k.measures.floor.medianMs, 0)} ms measured in this run` +
        (at10k.measures.cold ? `; cold child process ${fmt(at10k.measures.cold.medianMs, 0)} ms` : ''),
    );
  }
  if (linear !== undefined)
    console.log(
      `aim: linear to ${count(growthSpan[linearKey].to)}: ${linear ? 'met' : 'not met'} — ${linearKey} per component ×${fmt(growth[linearKey], 2)} from ${count(growthSpan[linearKey].from)} to ${count(growthSpan[linearKey].to)} (limit ${LINEAR_LIMIT}); ` +
        summary.map((s) => `${count(s.n)}: ${fmt(s.measures[linearKey].usPerComponent, 1)} µs/comp ×${fmt(s.measures[linearKey].ratioToFloor, 2)} floor`).join(', '),
    );
  console.log(
    `cpu time per component, largest/smallest N each measure ran at (steadier than wall time when the machine is busy): ` +
      Object.entries(cpuGrowth)
        .map(([k, g]) => `${k} ${fmt(g, 2)}`)
        .join(', '),
  );
  if (Math.max(loadBefore, loadAfter) > cpus().length / 2)
    console.log(`note: load average ${fmt(loadBefore, 2)} before, ${fmt(loadAfter, 2)} after, on ${cpus().length} CPUs: other processes competed for the CPU, so the figures are noisy`);

  mkdirSync(dirname(resultsFile), { recursive: true });
  writeFileSync(
    resultsFile,
    JSON.stringify(
      {
        bench: 'apply-dry',
        date: new Date().toISOString(),
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpu: { count: cpus().length, model: cpus()[0]?.model.trim() },
        loadAverage1m: { before: +loadBefore.toFixed(2), after: +loadAfter.toFixed(2) },
        seed,
        command: 'keystonectl apply-dry plans/plan.toml --json --trusted-key KEY (signed repository)',
        measures: Object.fromEntries(MEASURES.map(([k, label]) => [k, label.trim()])),
        sizes: summary,
        perComponentGrowth: { ...growth, span: growthSpan },
        perComponentCpuGrowth: cpuGrowth,
        verdict: { linear, linearMeasure: linearKey, linearLimit: LINEAR_LIMIT, under1sAt10000: under, budgetMs: BUDGET_MS },
        benchSeconds: +((performance.now() - t0) / 1000).toFixed(1),
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`\nwrote ${resultsFile} (bench took ${fmt((performance.now() - t0) / 1000, 0)} s)`);
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
