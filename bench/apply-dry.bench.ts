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
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchSize } from './apply-dry/bench-size.js';
import { mustRun } from './apply-dry/in-process.js';
import { count, fmt, MEASURES, summarise, table, type MeasureKey, type RawSize } from './apply-dry/summary.js';

const here = dirname(fileURLToPath(import.meta.url));
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
  console.error('usage: node --import tsx bench/apply-dry.bench.ts [--sizes 1000,10000,100000] [--runs 3] [--seed 1]');
  process.exit(2);
}

const workDir = mkdtempSync(join(tmpdir(), 'keystone-bench-apply-dry-'));
const loadBefore = loadavg()[0]!;
try {
  const t0 = performance.now();
  await mustRun(['keygen', '--out', join(workDir, 'bench'), '--no-password'], workDir);
  const raw: RawSize[] = [];
  for (const n of sizes) raw.push(await benchSize(n, workDir, join(workDir, 'bench.pub'), { sizes, baseRuns, seed }));
  const summary = summarise(raw);
  /** Per-component growth of each measure from the smallest N to the largest N where it ran. */
  const growth: Partial<Record<MeasureKey, number>> = {};
  const cpuGrowth: Partial<Record<MeasureKey, number>> = {};
  const growthSpan: Partial<Record<MeasureKey, { from: number; to: number }>> = {};
  for (const [key] of MEASURES) {
    const ran = summary.filter((s) => s.measures[key]);
    if (ran.length < 2) continue;
    const [a, b] = [ran[0]!, ran[ran.length - 1]!];
    growth[key] = +(b.measures[key]!.usPerComponent / a.measures[key]!.usPerComponent).toFixed(3);
    growthSpan[key] = { from: a.n, to: b.n };
    if (b.measures[key]!.cpuUsPerComponent)
      cpuGrowth[key] = +(b.measures[key]!.cpuUsPerComponent! / a.measures[key]!.cpuUsPerComponent!).toFixed(3);
  }
  const linearKey: MeasureKey = growth.pipeline !== undefined ? 'pipeline' : 'applyDry';
  const linear = growth[linearKey] !== undefined ? growth[linearKey]! <= LINEAR_LIMIT : undefined;
  const at10k =
    summary.find((s) => s.n === 10000 && s.measures.applyDry) ??
    [...summary].reverse().find((s) => s.measures.applyDry);
  const under = at10k ? at10k.measures.applyDry!.medianMs <= BUDGET_MS : undefined;
  const loadAfter = loadavg()[0]!;

  console.log(
    `\napply-dry benchmark — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, seed ${seed}`,
  );
  for (const s of summary)
    console.log(
      `  N=${count(s.n)}: ${s.layers} layers, ${count(s.edges)} edges (${count(s.hardEdges)} hard); ${s.bumped} bumped → diff restarts ${count(s.diffRestarts)}; ` +
        `output ${fmt(s.outputBytes / 1024, 0)} KiB; median of ${s.runs} runs (core diff: ${s.measures.core!.runsMs.length}; cold: ${s.cli ? 1 : 0})` +
        (s.cli ? '' : '; the plan is over the 1 MiB document cap, so keystonectl refuses it: pipeline and stages only'),
    );
  console.log('');
  console.log(table(summary, growth));
  console.log('');
  if (at10k) {
    const m = at10k.measures.applyDry!;
    console.log(
      `aim: apply-dry of ${count(at10k.n)} components ≤ ${fmt(BUDGET_MS, 0)} ms in-process: ${under ? 'met' : 'not met'} — ${fmt(m.medianMs, 0)} ms (${fmt(m.usPerComponent, 1)} µs/component), ` +
        `×${fmt(m.ratioToFloor, 2)} the parse floor of ${fmt(at10k.measures.floor!.medianMs, 0)} ms measured in this run` +
        (at10k.measures.cold ? `; cold child process ${fmt(at10k.measures.cold.medianMs, 0)} ms` : ''),
    );
  }
  if (linear !== undefined)
    console.log(
      `aim: linear to ${count(growthSpan[linearKey]!.to)}: ${linear ? 'met' : 'not met'} — ${linearKey} per component ×${fmt(growth[linearKey]!, 2)} from ${count(growthSpan[linearKey]!.from)} to ${count(growthSpan[linearKey]!.to)} (limit ${LINEAR_LIMIT}); ` +
        summary
          .map(
            (s) =>
              `${count(s.n)}: ${fmt(s.measures[linearKey]!.usPerComponent, 1)} µs/comp ×${fmt(s.measures[linearKey]!.ratioToFloor, 2)} floor`,
          )
          .join(', '),
    );
  console.log(
    `cpu time per component, largest/smallest N each measure ran at (steadier than wall time when the machine is busy): ` +
      Object.entries(cpuGrowth)
        .map(([k, g]) => `${k} ${fmt(g, 2)}`)
        .join(', '),
  );
  if (Math.max(loadBefore, loadAfter) > cpus().length / 2)
    console.log(
      `note: load average ${fmt(loadBefore, 2)} before, ${fmt(loadAfter, 2)} after, on ${cpus().length} CPUs: other processes competed for the CPU, so the figures are noisy`,
    );

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
        verdict: {
          linear,
          linearMeasure: linearKey,
          linearLimit: LINEAR_LIMIT,
          under1sAt10000: under,
          budgetMs: BUDGET_MS,
        },
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
