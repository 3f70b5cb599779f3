// Component hashes are persisted on devices and compared across versions: the faster canonical JSON and the
// validators' fast paths must leave every hash exactly as it was.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { resolveDesiredState } from '../../src/core/desired-state.js';
import { canonicalJson, canonicalJsonByReplacer, componentHash } from '../../src/core/identity.js';
import { parsePlan } from '../../src/core/plan.js';
import { parseRecipe, recipeSchema, type ParsedRecipe } from '../../src/core/recipe.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { loadRevision } from '../../src/load/load-revision.js';
import { parse as parseSchema } from '../../src/core/valid.js';

/** The hash as version 1 was first written: the key-sorting replacer over the zod-built recipe. */
function referenceHash(input: Parameters<typeof componentHash>[0]): string {
  const { recipe: _path, ...planEntry } = input.entry;
  const { description: _d, ...metadata } = input.recipe.metadata;
  const json = canonicalJsonByReplacer({
    metadata,
    artifacts: input.recipe.artifacts,
    lifecycle: input.recipe.lifecycle,
    planEntry,
  });
  return `v1:${createHash('sha256').update(json).digest('hex')}`;
}

const key = fc.oneof(
  fc.constantFrom('a', 'b', 'B', '_', '1', '10', '2', 'constructor', '__proto__', 'toJSON', 'a"b', 'é', ''),
  fc.string({ maxLength: 5 }),
);
const leaf = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(key, tie('v'), { maxKeys: 5 }),
    fc.dictionary(key, tie('v'), { maxKeys: 5, noNullPrototype: false }),
  ),
})).v;

describe('canonicalJson', () => {
  it('is the text of the key-sorting replacer, for any JSON-like value', () => {
    fc.assert(
      fc.property(value, (v) => canonicalJson(v) === canonicalJsonByReplacer(v)),
      { numRuns: 5000 },
    );
  });

  it('is the text of the replacer for what the walk leaves to it: dates, toJSON, class instances, "__proto__" keys, deep nesting', () => {
    class Point {
      constructor(
        readonly y: number,
        readonly x: number,
      ) {}
    }
    const proto = JSON.parse('{"b":1,"__proto__":{"d":1,"c":2},"a":[{"z":1,"y":2}]}');
    let deep: unknown = { b: 1, a: 2 };
    for (let i = 0; i < 100; i++) deep = { z: deep, y: [i] };
    for (const v of [
      new Date(0),
      { b: new Date(1), a: 1 },
      { toJSON: () => ({ b: 1, a: 2 }) },
      new Point(1, 2),
      { p: new Point(1, 2) },
      proto,
      deep,
      [undefined, () => 1],
      Object.assign(Object.create(null), { b: 1, a: 2 }),
    ])
      expect(canonicalJson(v)).toBe(canonicalJsonByReplacer(v));
  });
});

/** Recipe texts with most of what enters the hash: artifacts, install, run kinds, services, replicas, config and placeholders. */
const recipeText = fc
  .record({
    version: fc.constantFrom('1.0.0', '2.7.5', '1.0.0-rc.1'),
    description: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
    artifacts: fc.array(
      fc.record({
        uri: fc.constantFrom('https://a.example/x.tgz', 'bin/x'),
        sha256: fc.constantFrom('a'.repeat(64), 'B'.repeat(64)),
        unpack: fc.option(fc.boolean(), { nil: undefined }),
      }),
      { maxLength: 2 },
    ),
    install: fc.option(
      fc.record({
        script: fc.constantFrom('mkdir -p data', 'mkdir -p {{config.dir}}'),
        timeout: fc.option(fc.constantFrom('1m', '90s'), { nil: undefined }),
      }),
      { nil: undefined },
    ),
    kind: fc.constantFrom('process', 'container', 'services'),
    args: fc.array(fc.constantFrom('--port', '{{config.port}}', 'x y', '{"a":1}'), { maxLength: 3 }),
    env: fc.dictionary(
      fc.constantFrom('B', 'A', 'LOG', 'Z_1', '10', '2'),
      fc.constantFrom('info', '{{config.dir}}', ''),
      { maxKeys: 4 },
    ),
    replicas: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    strategy: fc.option(fc.constantFrom('stop-first', 'start-first'), { nil: undefined }),
    health: fc.option(
      fc.constantFrom('http://127.0.0.1:{{config.port}}/health', 'tcp://127.0.0.1:9000', 'cmd:test -f x'),
      { nil: undefined },
    ),
    caps: fc.option(fc.array(fc.constantFrom('CAP_CHOWN', 'CAP_NET_BIND_SERVICE'), { maxLength: 2 }), {
      nil: undefined,
    }),
    port: fc.integer({ min: 1, max: 65535 }),
  })
  .map((r) => {
    const run: Record<string, unknown> = {
      ...(r.strategy && { update_strategy: r.strategy }),
      ...(r.replicas !== undefined && r.kind !== 'services' && { replicas: r.replicas }),
    };
    if (r.kind === 'container') run.type = 'container';
    if (r.kind === 'container')
      run.container = {
        image: 'busybox:1',
        env: r.env,
        command: r.args,
        ...(r.caps && { capabilities: r.caps }),
        ...(r.replicas === undefined && { ports: [{ host_port: r.port, container_port: 80 }] }),
      };
    else run.exec = { command: './bin/x', args: r.args, env: r.env };
    if (r.kind === 'process' && r.caps) run.security = { user: 'nobody', capabilities: r.caps };
    if (r.health) run.health = { check: r.health, interval: '5s' };
    const doc: Record<string, unknown> = {
      metadata: {
        name: 'com.acme.x',
        version: r.version,
        ...(r.description !== undefined && { description: r.description }),
      },
      artifacts: r.artifacts
        .map((a) => ({ ...a, ...(a.unpack === undefined && { unpack: undefined }) }))
        .map((a) => JSON.parse(JSON.stringify(a))),
      config: { port: r.port, dir: 'data', http: { port: r.port } },
      lifecycle: {
        ...(r.install && { install: JSON.parse(JSON.stringify(r.install)) }),
        ...(r.kind === 'services' ? { services: { web: run, jobs: { ...run, after: ['web'] } } } : { run }),
      },
    };
    return stringify(doc);
  });

describe('component hashes', () => {
  it('are those of the zod-built recipes under the replacer, for generated recipes and plan configuration', () => {
    fc.assert(
      fc.property(recipeText, fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }), (text, port) => {
        const plan = parsePlan(
          'plans/p.toml',
          `[[components]]\nname = "x"\nrecipe = "recipes/x.toml"\n${port === undefined ? '' : `[components.config]\nport = ${port}\n`}`,
        );
        const fast = parseRecipe('recipes/x.toml', text);
        expect(fast.diagnostics).toEqual([]);
        // The same file as zod alone builds it.
        const slow: ParsedRecipe = { ...fast, recipe: parseSchema(recipeSchema, fast.doc!.raw) };
        const a = resolveDesiredState(plan, new Map([['recipes/x.toml', fast]]));
        const b = resolveDesiredState(plan, new Map([['recipes/x.toml', slow]]));
        if (!a.ok || !b.ok) throw new Error(JSON.stringify([a, b]));
        expect(a.state.components.map((c) => c.hash)).toEqual(b.state.components.map((c) => c.hash));
        for (const c of a.state.components) expect(c.hash).toBe(referenceHash(c));
        expect(JSON.stringify(a.state)).toBe(JSON.stringify(b.state));
      }),
      { numRuns: 400 },
    );
  });

  it('of the repository plans are those of the previous release (pinned)', async () => {
    const r = await loadRevision(new DirectoryReader('.'), 'plans/edge-gateway.toml');
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.state.components.map((c) => `${c.name} ${c.hash}`)).toEqual([
      'influxdb v1:8ad5e5be0bf06c718c36ef710a9b93ebb56cbc909ef1e2890734f4475dc32827',
      'api v1:5e0d0a33b25f0aef8c67f9faee4305b2a764396217d39300d7f1c81b6ca10c9f',
      'telemetry v1:774375586bfad4f15a0edc84fe928ea82f750bc4908426a994681bf41b09fac8',
      'web v1:409a25bde2eb2325276f226e077520d5067e0e0f0927eb6fccec35d1904d80b8',
      'gateway/reports v1:e0b315f8779796618c7468bde39fd1c60fe5c9c2f73e637081be4726356f1607',
      'gateway/proxy v1:2e23d8e138920efec18cc126157bd272bdbb0d205cd0b14c873fa43c7b9d0cd9',
    ]);
  });
});
