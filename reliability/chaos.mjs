#!/usr/bin/env node
// `npm run chaos -- --kills N [--seed S] [--no-container]`: issue 18's kill -9 at random points. The real agent
// (dist/, built by the npm script) with the example stack, a composite and a container, driven through pushes,
// crashes, operator restarts and composite rollbacks, killed N times at random moments; after every restart that
// settles the invariants are checked. Prints the figure, writes reliability/results/chaos.json, exits 1 when any
// invariant failed (printing how to replay the run). The driver is TypeScript (reliability/chaos/), loaded through
// vite's module runner, as vitest loads it for the test.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createServer } from 'vite';

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = join(here, '..');

const USAGE = 'usage: npm run chaos -- [--kills 1000] [--seed S] [--no-container] [--max-minutes M] [--quiet]';
let values;
try {
  ({ values } = parseArgs({
    options: {
      kills: { type: 'string', default: '1000' },
      seed: { type: 'string' },
      'no-container': { type: 'boolean', default: false },
      'max-minutes': { type: 'string' },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  }));
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const kills = Number(values.kills);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const maxMinutes = values['max-minutes'] === undefined ? undefined : Number(values['max-minutes']);
if (
  !Number.isInteger(kills) ||
  kills < 1 ||
  !Number.isInteger(seed) ||
  seed < 0 ||
  (maxMinutes !== undefined && !(maxMinutes > 0))
) {
  console.error(`--kills takes a whole number ≥ 1, --seed one ≥ 0, --max-minutes a number > 0\n${USAGE}`);
  process.exit(2);
}

// The container component needs a Docker engine: without one the run goes on without it, and says so.
let container = !values['no-container'];
if (container && spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 20_000 }).status !== 0) {
  console.log('chaos: no Docker engine answers (docker info): running without the container component');
  container = false;
}

// A dev server in middleware mode (no port) whose module runner stays open for the whole run: the sources import
// modules lazily (runnerImport closes its runner once the import returns, and a later dynamic import fails).
const vite = await createServer({
  configFile: false,
  root: projectRoot,
  logLevel: 'error',
  appType: 'custom',
  server: { middlewareMode: true, hmr: false, ws: false },
});
const module = await vite.ssrLoadModule(join(here, 'chaos', 'run-chaos.ts'));
const replay = `npm run chaos -- --kills ${kills} --seed ${seed}${container ? '' : ' --no-container'}`;
console.log(`chaos: seed ${seed}, ${kills} kills, ${container ? 'with' : 'without'} the container (replay: ${replay})`);

const result = await module.runChaos({
  kills,
  seed,
  container,
  ...(maxMinutes !== undefined && { budgetMs: maxMinutes * 60_000 }),
  onProgress: values.quiet ? undefined : (line) => console.log(line),
});
const figure = module.figure(result);
await vite.close();

mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(
  join(here, 'results', 'chaos.json'),
  `${JSON.stringify({ figure, at: new Date().toISOString(), replay, ...result }, null, 2)}\n`,
);

console.log(
  `chaos: ${result.settles} settled restarts checked; ${result.killsInsideApply} kills landed inside an apply, ${result.killsDuringRecovery} during a restart's recovery, ` +
    `${result.killsInAdoptedHealthWait} inside the health check of adopted instances (${result.adoptedWaitAims - result.adoptedWaitMissed} of ${result.adoptedWaitAims} aimed there); ` +
    `${result.pushesWhileDown} pushes while the agent was down, ${result.stalledPushes} made again after a stall; mean settle ${result.meanSettleSeconds.toFixed(1)} s; actions ${JSON.stringify(result.actions)}`,
);
if (result.outOfTime)
  console.log(
    `chaos: stopped at the time budget (--max-minutes ${maxMinutes}) after ${result.kills} of the ${kills} kills asked for (${(result.seconds / Math.max(1, result.kills)).toFixed(1)} s a kill)`,
  );
console.log(figure);
if (result.failures.length || (result.kills < kills && !result.outOfTime)) {
  for (const f of result.failures.slice(0, 10))
    console.error(`\nFAILED at kill ${f.kill} (cycle ${f.cycle}): ${f.invariant}: ${f.detail}\n${f.context}`);
  console.error(`\nchaos: invariants failed; replay with: ${replay}`);
  process.exit(1);
}
