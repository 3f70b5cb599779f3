// One size of the apply-dry bench: two generated repositories (base and ~1% bumped), signed, checked, then every measure
// timed in turns, the core diff, and one cold child process.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveDesiredState } from '../../dist/core/desired-state.js';
import { actualFromDesired, diff } from '../../dist/core/diff.js';
import { parsePlan } from '../../dist/core/plan.js';
import { parseRecipe } from '../../dist/core/recipe.js';
import { MAX_DOCUMENT_BYTES } from '../../dist/source/repo-reader.js';
import { generateRepo } from '../generate-repo.js';
import { coldRun, keystonectl, load, mustRun, parseFloor, pipeline } from './in-process.js';
import type { RawSize } from './summary.js';
import { cpuMs, gc, timeInTurns, timeOnce } from './timing.js';

export async function benchSize(
  n: number,
  workDir: string,
  publicKey: string,
  { sizes, baseRuns, seed }: { sizes: number[]; baseRuns: number; seed: number },
): Promise<RawSize> {
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
  let outputBytes: number | undefined;
  if (cli) {
    process.stderr.write('signing… ');
    await mustRun(['sign', '--key', publicKey.replace(/\.pub$/, '.key'), '--repo', base.root], workDir);
    // Correctness first (untimed, and the warm-up of both apply-dry measures): they succeed and print the whole plan.
    const first = await mustRun(signed, base.root);
    const printed = JSON.parse(first.stdout);
    if (printed.startOrder?.length !== n)
      throw new Error(`apply-dry printed ${printed.startOrder?.length} components to start, expected ${n}`);
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
  const parsedRecipes = new Map(recipePaths.map((f, k) => [f, parseRecipe(f, recipeTexts[k]!)]));
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
        for (let k = 0; k < recipePaths.length; k++) parseRecipe(recipePaths[k]!, recipeTexts[k]!);
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
  if (!(restarting >= changed.changed.length && restarting < n))
    throw new Error(
      `diff restarts ${restarting} of ${n}; expected at least the ${changed.changed.length} bumped and not everything`,
    );
  for (let k = 0; k < 3; k++) diff(desired, actual);
  const coreMs: number[] = [];
  for (let k = 0; k < 25; k++) coreMs.push(await timeOnce(() => diff(desired, actual), 'core'));

  let coldMs: number | undefined;
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
