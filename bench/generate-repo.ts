// Writes a synthetic desired-state repository (SPEC §1-3) for benchmarks: N components as a layered
// random DAG, deterministic for a given seed (a tiny PRNG, never Math.random, so runs are repeatable).
//
//   import { generateRepo } from './generate-repo.js';
//   generateRepo('/tmp/repo', { n: 10000 });                  // the base revision
//   generateRepo('/tmp/repo-changed', { n: 10000, changed: true }); // the same, ~1% bumped in version
//
// Or from a shell: node --import tsx bench/generate-repo.ts DIR N [--changed] [--seed S]
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** mulberry32: a 32-bit state PRNG, good enough for shaping test data and trivially seedable. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pad = (i: number) => String(i).padStart(5, '0');
export const componentName = (i: number): string => `c${pad(i)}`;
export const recipeName = (i: number): string => `com.bench.c${pad(i)}`;
export const recipePath = (i: number): string => `recipes/${recipeName(i)}.toml`;
export const PLAN = 'plans/plan.toml';

/**
 * The repository as data: which layer each component is in, its version and its dependencies.
 * Layers: ~sqrt(N), components spread evenly over them in index (plan) order; a component of layer
 * k > 0 depends on 0–3 distinct components of layers < k (the first from layer k-1); each edge is
 * hard (60%) or ordering, and some carry a version range that the provider satisfies.
 */
/** A dependency of a generated component: on the component of index `on`. */
export interface ModelDependency {
  on: number;
  type: 'hard' | 'ordering';
  version: string | undefined;
}

/** A generated component. */
export interface ModelComponent {
  index: number;
  layer: number;
  version: string;
  port: number;
  health: 'http' | 'tcp' | 'cmd';
  artifactDigest: string;
  withArtifact: boolean;
  withInstall: boolean;
  dependencies: ModelDependency[];
}

export interface Model {
  n: number;
  seed: number;
  layerCount: number;
  components: ModelComponent[];
}

export function modelRepo({ n, seed = 1 }: { n: number; seed?: number }): Model {
  const rand = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive
  const layerCount = Math.max(1, Math.round(Math.sqrt(n)));
  const layerOf = (i: number) => Math.floor((i * layerCount) / n);
  const firstOfLayer: number[] = []; // index of the first component of each layer
  for (let i = 0; i < n; i++) if (firstOfLayer[layerOf(i)] === undefined) firstOfLayer[layerOf(i)] = i;

  const components: ModelComponent[] = [];
  const deepest = Array.from({ length: layerCount }, (): number[] => []); // per layer: the components that resolve to it
  for (let i = 0; i < n; i++) {
    const layer = layerOf(i);
    const earlier = layer === 0 ? 0 : firstOfLayer[layer]!; // components 0..earlier-1 are in earlier layers
    const dependencies: ModelDependency[] = [];
    if (earlier > 0) {
      const want = Math.min(int(0, 3), earlier);
      const picked = new Set<number>();
      // The first dependency is a component that resolves to the layer just before, so the resolved
      // layering keeps the ~sqrt(N) generated layers (uniform picks over all earlier components would
      // collapse it to a handful); the others come from any earlier layer.
      if (want > 0) {
        const deep = deepest[layer - 1]!;
        picked.add(deep.length ? deep[int(0, deep.length - 1)]! : int(firstOfLayer[layer - 1]!, earlier - 1));
      }
      while (picked.size < want) picked.add(int(0, earlier - 1));
      for (const j of picked) {
        const type = rand() < 0.6 ? ('hard' as const) : ('ordering' as const);
        const r = rand();
        const version = r < 0.4 ? '>=1.0.0' : r < 0.7 ? '^1' : undefined; // patch bumps keep satisfying both
        dependencies.push({ on: j, type, version });
      }
    }
    if (dependencies.length > 0 || layer === 0) deepest[layer]!.push(i);
    const kind = int(0, 2);
    components.push({
      index: i,
      layer,
      version: `1.${int(0, 20)}.${int(0, 9)}`,
      port: 20000 + (i % 40000),
      health: kind === 0 ? 'http' : kind === 1 ? 'tcp' : 'cmd',
      artifactDigest: hex64(rand),
      withArtifact: rand() < 0.5,
      withInstall: rand() < 0.3,
      dependencies,
    });
  }
  return { n, seed, layerCount, components };
}

/** The ~1% of components the "changed" variant bumps: a separate PRNG stream, so the base repo does not move. */
export function changedIndices(n: number, seed = 1): number[] {
  const rand = mulberry32((seed ^ 0x9e3779b9) >>> 0);
  const count = Math.max(1, Math.round(n / 100));
  const picked = new Set<number>();
  while (picked.size < count) picked.add(Math.floor(rand() * n));
  return [...picked].sort((a, b) => a - b);
}

function hex64(rand: () => number): string {
  let s = '';
  for (let k = 0; k < 8; k++) s += ((rand() * 4294967296) >>> 0).toString(16).padStart(8, '0');
  return s;
}

/** Bumps the patch level: 1.4.2 → 1.4.3. */
const bump = (v: string) => v.replace(/\d+$/, (p) => String(Number(p) + 1));

export function recipeToml(c: ModelComponent, version = c.version): string {
  const name = recipeName(c.index);
  const lines = [
    `# Synthetic component ${componentName(c.index)}, layer ${c.layer}.`,
    '[metadata]',
    `name = "${name}"`,
    `version = "${version}"`,
    `description = "Benchmark component ${c.index} (generated)."`,
    '',
  ];
  if (c.withArtifact) {
    lines.push(
      '[[artifacts]]',
      `uri = "https://artifacts.bench.example/${name}/${version}/bundle.tar.gz"`,
      `sha256 = "${c.artifactDigest}"`,
      'unpack = true',
      '',
    );
  }
  if (c.withInstall) lines.push('[lifecycle.install]', 'script = "mkdir -p data"', 'timeout = "1m"', '');
  lines.push(
    '[lifecycle.run]',
    'type = "process"',
    'restart_policy = "always"',
    '',
    '[lifecycle.run.exec]',
    `command = "./bin/${componentName(c.index)}"`,
    `args = ["--port", "${c.port}", "--data", "data"]`,
    `env = { COMPONENT = "${componentName(c.index)}", LOG_LEVEL = "info" }`,
    '',
    '[lifecycle.run.security]',
    'user = "nobody"',
    'no_new_privileges = true',
    'capabilities = []',
    '',
    '[lifecycle.run.health]',
    `check = "${c.health === 'http' ? `http://127.0.0.1:${c.port}/health` : c.health === 'tcp' ? `tcp://127.0.0.1:${c.port}` : `cmd:test -S /run/${componentName(c.index)}.sock`}"`,
    'interval = "10s"',
    'timeout = "3s"',
    'failure_threshold = 6',
  );
  for (const d of c.dependencies) {
    lines.push('', '[[dependencies]]', `name = "${recipeName(d.on)}"`);
    if (d.version) lines.push(`version = "${d.version}"`);
    lines.push(`type = "${d.type}"`);
  }
  return lines.join('\n') + '\n';
}

export function planToml(model: Model): string {
  const parts = [`# Synthetic plan: ${model.n} components in ${model.layerCount} layers (seed ${model.seed}).\n`];
  for (const c of model.components)
    parts.push(`\n[[components]]\nname = "${componentName(c.index)}"\nrecipe = "${recipePath(c.index)}"\n`);
  return parts.join('');
}

/**
 * Writes the repository into `dir` (emptied first): recipes/, plans/plan.toml. With `changed`, ~1% of
 * the recipes carry a bumped patch version. Returns what a benchmark needs to check its results.
 */
export function generateRepo(
  dir: string,
  { n, seed = 1, changed = false }: { n: number; seed?: number; changed?: boolean },
) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`n must be a positive integer, not ${n}`);
  const root = resolve(dir);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, 'recipes'), { recursive: true });
  mkdirSync(join(root, 'plans'), { recursive: true });
  const model = modelRepo({ n, seed });
  const bumped = new Set(changed ? changedIndices(n, seed) : []);
  let edges = 0;
  let hardEdges = 0;
  for (const c of model.components) {
    edges += c.dependencies.length;
    hardEdges += c.dependencies.filter((d) => d.type === 'hard').length;
    writeFileSync(join(root, recipePath(c.index)), recipeToml(c, bumped.has(c.index) ? bump(c.version) : c.version));
  }
  writeFileSync(join(root, PLAN), planToml(model));
  return {
    root,
    plan: PLAN,
    n,
    seed,
    layerCount: model.layerCount,
    edges,
    hardEdges,
    files: [PLAN, ...model.components.map((c) => recipePath(c.index))],
    changed: [...bumped].map(componentName),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [dir, nText, ...rest] = process.argv.slice(2);
  if (!dir || !nText) {
    console.error('usage: node --import tsx bench/generate-repo.ts DIR N [--changed] [--seed S]');
    process.exit(2);
  }
  const seedAt = rest.indexOf('--seed');
  const info = generateRepo(dir, {
    n: Number(nText),
    changed: rest.includes('--changed'),
    seed: seedAt >= 0 ? Number(rest[seedAt + 1]) : 1,
  });
  console.log(
    `${info.root}: ${info.n} components, ${info.layerCount} layers, ${info.edges} edges (${info.hardEdges} hard)${info.changed.length ? `, bumped ${info.changed.length}` : ''}`,
  );
}
