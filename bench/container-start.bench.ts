// Benchmark of container start-up: create-and-start of one container through ContainerRuntime (dist/runtime/
// container-runtime.js: start() resolves once the engine reports the container started) beside `docker run -d` of
// the same image in the same run. Run by hand (`npm run bench -- container-start`, which builds first); it asserts
// no timing, it reports. Aim: Keystone within 30 ms of `docker run -d`.
//
// The rows take turns run by run (keystone, docker run -d, docker run -d with Keystone's options), each timed from
// the call to its return; every container is removed between runs (untimed). One untimed warm-up of each first.
//   keystone          ContainerRuntime.start(): create (labels, no-new-privileges, CapDrop ALL, json-file bounded)
//                     and start over the engine's socket; its exit watch and log copy begin without being awaited
//   docker run -d     the docker CLI: `docker run -d IMAGE sleep 1000`
//   docker run -d +   the same options as Keystone's: --security-opt no-new-privileges --cap-drop ALL, the labels,
//                     --log-opt max-size/max-file: what a shell script doing the agent's job would run
// The image: keystone-bench/busybox:1, a `docker import` of the host's static busybox (no registry is needed).
//
// Options: --runs 10
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { DesiredComponent } from '../dist/core/desired-state-types.js';
import { load1, machine } from './lib/machine.js';
import { benchDir, ensureDir, projectDir } from './lib/paths.js';
import { fmt, median, quantile, round } from './lib/stats.js';

const { values: opts } = parseArgs({ options: { runs: { type: 'string', default: '10' } } });
const RUNS = Number(opts.runs);
const IMAGE = 'keystone-bench/busybox:1';
const resultsFile = join(benchDir, 'results', 'container-start.json');
const OWNER = `ks-bench-${process.pid}`;
const BENCH_LABEL = 'io.keystone.bench';

const docker = (...args: string[]) => spawnSync('docker', args, { encoding: 'utf8' });
if (docker('info', '--format', '{{.ServerVersion}}').status !== 0) {
  console.log('skipped: no Docker engine answers `docker info`');
  process.exit(0);
}
ensureImage();

const { ContainerRuntime } = (await import(
  join(projectDir, 'dist', 'runtime', 'container-runtime.js')
)) as typeof import('../dist/runtime/container-runtime.js');
const { recipeSchema } = (await import(
  join(projectDir, 'dist', 'core', 'recipe.js')
)) as typeof import('../dist/core/recipe.js');
const { parse } = (await import(
  join(projectDir, 'dist', 'core', 'valid.js')
)) as typeof import('../dist/core/valid.js');
const { LABELS } = (await import(
  join(projectDir, 'dist', 'runtime', 'container-spec.js')
)) as typeof import('../dist/runtime/container-spec.js');

const work = mkdtempSync(join(tmpdir(), 'ks-bench-container-'));
const runtime = new ContainerRuntime({ ownerTag: OWNER });
const recipe = parse(recipeSchema, {
  metadata: { name: 'com.bench.sleeper', version: '1.0.0' },
  lifecycle: {
    run: { type: 'container', container: { image: IMAGE, pull_policy: 'never', command: ['sleep', '1000'] } },
  },
});
// The recipe has a run (a container): the DesiredComponent's Recipe, a resolved unit's.
const component = (i: number): DesiredComponent => ({
  name: 'sleeper',
  index: 0,
  recipePath: 'recipes/sleeper.toml',
  entry: { name: 'sleeper', recipe: 'recipes/sleeper.toml' },
  recipe: recipe as DesiredComponent['recipe'],
  dependencies: [],
  hash: `v1:${String(i).padStart(64, '0')}`,
});
const paths = { workDir: join(work, 'work'), logDir: join(work, 'logs') };

type Row = 'keystone' | 'dockerRun' | 'dockerRunSameOptions';
const rows: Record<Row, (i: number) => Promise<number>> = {
  keystone: async (i) => {
    const t0 = performance.now();
    const inst = await runtime.start(component(i), paths);
    const ms = performance.now() - t0;
    await runtime.stop(inst.ref, 0);
    return ms;
  },
  dockerRun: async () => timedRun(['run', '-d', '--label', `${BENCH_LABEL}=${OWNER}`, IMAGE, 'sleep', '1000']),
  dockerRunSameOptions: async (i) =>
    timedRun([
      'run',
      '-d',
      '--label',
      `${BENCH_LABEL}=${OWNER}`,
      '--label',
      `${LABELS.component}=sleeper`,
      '--label',
      `${LABELS.hash}=v1:${i}`,
      '--label',
      `${LABELS.owner}=${OWNER}-cli`,
      '--security-opt',
      'no-new-privileges',
      '--cap-drop',
      'ALL',
      '--log-driver',
      'json-file',
      '--log-opt',
      'max-size=10m',
      '--log-opt',
      'max-file=2',
      '--restart',
      'no',
      IMAGE,
      'sleep',
      '1000',
    ]),
};

/** `docker …` timed from spawn to exit (async, so the event loop is as free as for the Keystone row); the container is then removed. */
async function timedRun(args: string[]): Promise<number> {
  const t0 = performance.now();
  const id = await new Promise<string>((resolve, reject) => {
    const p = spawn('docker', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('exit', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`docker ${args.join(' ')} exited ${code}`)),
    );
  });
  const ms = performance.now() - t0;
  docker('rm', '-f', id);
  return ms;
}

const rowNames = Object.keys(rows) as Row[];
const samples = Object.fromEntries(rowNames.map((k) => [k, [] as number[]])) as Record<Row, number[]>;
const loadBefore = load1();
try {
  for (const k of rowNames) await rows[k](-1); // warm-up: engine caches, the CLI's pages, our JIT
  for (let i = 0; i < RUNS; i++) for (const k of rowNames) samples[k].push(await rows[k](i));
} finally {
  await runtime.close();
  const left = docker('ps', '-aq', '--filter', `label=${BENCH_LABEL}=${OWNER}`)
    .stdout.trim()
    .split('\n')
    .filter(Boolean);
  const owned = docker('ps', '-aq', '--filter', `label=${LABELS.owner}=${OWNER}`)
    .stdout.trim()
    .split('\n')
    .filter(Boolean);
  if (left.length + owned.length) docker('rm', '-f', ...left, ...owned);
  rmSync(work, { recursive: true, force: true });
}
const loadAfter = load1();

const stats = (xs: number[]) => ({
  medianMs: round(median(xs), 2),
  p90Ms: round(quantile(xs, 0.9), 2),
  minMs: round(Math.min(...xs), 2),
  runsMs: xs.map((x) => round(x, 2)),
});
const results = Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, stats(xs)])) as Record<
  Row,
  ReturnType<typeof stats>
>;
const ks = results.keystone.medianMs!;
const ref = results.dockerRun.medianMs!;
const comparison = {
  differenceMs: round(ks - ref, 2),
  ratio: round(ks / ref, 3),
  aim: 'keystone within 30 ms of docker run -d (difference ≤ 30 ms)',
  met: ks - ref <= 30,
};

console.log(`container create-and-start, median of ${RUNS} (p90, min), ms`);
const label: Record<string, string> = {
  keystone: 'keystone ContainerRuntime.start',
  dockerRun: 'docker run -d',
  dockerRunSameOptions: 'docker run -d (Keystone options)',
};
for (const [k, r] of Object.entries(results))
  console.log(`  ${label[k]!.padEnd(34)} ${fmt(r.medianMs, 1).padStart(7)}  (${fmt(r.p90Ms, 1)}, ${fmt(r.minMs, 1)})`);
console.log(
  `  difference ${fmt(comparison.differenceMs, 1)} ms, ratio ×${fmt(comparison.ratio, 2)} against docker run -d: aim ${comparison.met ? 'met' : 'NOT met'}`,
);

ensureDir(join(benchDir, 'results'));
const engine = docker('version', '--format', '{{.Server.Version}}').stdout.trim();
writeFileSync(
  resultsFile,
  JSON.stringify(
    {
      bench: 'container-start',
      date: new Date().toISOString(),
      ...machine(),
      dockerEngine: engine,
      loadAverage1m: { before: round(loadBefore, 2), after: round(loadAfter, 2) },
      runs: RUNS,
      image: IMAGE,
      measures: {
        keystone:
          'ContainerRuntime.start() from call to return: create + start over the engine socket (container running)',
        dockerRun: '`docker run -d IMAGE sleep 1000` from spawn to exit',
        dockerRunSameOptions:
          '`docker run -d` with the labels, no-new-privileges, --cap-drop ALL and json-file options Keystone sets',
      },
      results,
      comparison,
    },
    null,
    2,
  ) + '\n',
);
console.log(`wrote ${resultsFile}`);

/** keystone-bench/busybox:1 from the host's /bin/busybox, unless the engine has it. */
function ensureImage() {
  if (docker('image', 'inspect', IMAGE).status === 0) return;
  const root = mkdtempSync(join(tmpdir(), 'ks-bench-rootfs-'));
  try {
    mkdirSync(join(root, 'bin'));
    copyFileSync('/bin/busybox', join(root, 'bin', 'busybox'));
    for (const a of ['sh', 'sleep', 'true']) symlinkSync('busybox', join(root, 'bin', a));
    const r = spawnSync(
      'sh',
      ['-c', `tar -C "$1" -c . | docker import --change 'ENV PATH=/bin' - "$2"`, 'sh', root, IMAGE],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`docker import failed: ${r.stderr}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
