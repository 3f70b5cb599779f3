// The validators' fast paths against the schemas (valibot, through valid.ts): whatever the fast path accepts, the schema accepts too and builds the very same
// value (same keys, same key order, same types); whatever the schema refuses, the fast path leaves to the schema.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse, stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { parsePlan, planSchema } from '../../src/core/plan.js';
import { fastPlan, fastRecipe } from '../../src/core/recipe-fast-path.js';
import { parseRecipe, recipeSchema } from '../../src/core/recipe.js';
import { safeParse as safeParseSchema } from '../../src/core/valid.js';

/** The fast path agrees with zod on `raw`: it gives up, or zod accepts and builds exactly what it built. */
function agrees(
  fast: (raw: unknown) => unknown,
  schema: typeof recipeSchema | typeof planSchema,
  raw: unknown,
): boolean {
  const mine = fast(raw);
  const theirs = safeParseSchema(schema, raw);
  if (mine === undefined) return true;
  expect(theirs.success).toBe(true);
  const data = theirs.success ? theirs.data : undefined;
  expect(JSON.stringify(mine)).toBe(JSON.stringify(data)); // key order too
  expect(sameShape(mine, data)).toBe(true);
  return true;
}

/** Deep equality that also sees prototypes, own keys set to undefined and key order (toStrictEqual stumbles on a key named "constructor"). */
function sameShape(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  return (
    ka.length === kb.length &&
    ka.every(
      (k, i) =>
        k === kb[i] && sameShape((a as Record<PropertyKey, unknown>)[k], (b as Record<PropertyKey, unknown>)[k]),
    )
  );
}

const pick = <T>(...xs: T[]) => fc.constantFrom(...xs);
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 2 });
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  pick('', 'x', 'a{{config.port}}b', '{{deps.db.exports.url}}', '{{ config.a.b }}', 'ünï', '__proto__'),
);
const key = fc.oneof(
  pick('a', 'b', 'port', 'LOG_LEVEL', 'http', '1', '10', 'a.b', 'constructor', '__proto__', ''),
  fc.string({ maxLength: 6 }),
);
const num = fc.oneof(fc.integer({ min: -5, max: 70000 }), pick(0, 1, 65535, 65536, 2147483647, 2 ** 53, 0.5, -1));
const scalar = fc.oneof(text, num, fc.boolean());
const configValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.dictionary(key, tie('v'), { maxKeys: 3 })),
})).v;
const duration = fc.oneof(
  pick('10s', '1m', '200ms', '0', '0s', '169h', '1h30m', 'soon', '', '5m'),
  fc.string({ maxLength: 4 }),
);
const version = pick('1.2.3', '1.0.0-rc.1', '2.0.0+build.7', 'v1.2.3', '1.2', ' 1.2.3', '0.0.1');
const range = pick('>=1.0.0', '^1', '1.x', '', ' ', 'nonsense', '~2.3', '*');
const rdns = pick('com.acme.api', 'com.acme.db', 'acme', 'Com.Acme.X', 'com..acme', 'com.acme.-x', 'org.example.a_b');
const check = pick(
  'http://127.0.0.1:8080/health',
  'https://x/h',
  'tcp://127.0.0.1:9000',
  'tcp://h:0',
  'tcp://h',
  'cmd:true',
  'cmd: ',
  'ftp://x',
  'nope',
  'http://127.0.0.1:{{config.port}}/h',
  '{{config.url}}',
);
const user = pick('nobody', 'app:app', '1000', '1000:1000', '4294967295', 'root', 'a b', ':x', '');
const capability = pick('CAP_NET_BIND_SERVICE', 'CAP_CHOWN', 'NET_ADMIN', 'cap_chown');

/** A table with some of `shape`'s keys (and now and then one it does not know), as TOML would give it. */
function tableOf(shape: Record<string, fc.Arbitrary<unknown>>, extra = 0.05): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(shape);
  return fc
    .tuple(
      fc.record(shape, { requiredKeys: [] }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.constantFrom(...keys),
      scalar,
    )
    .map(([t, roll, k, v]) => (roll < extra ? { ...t, [`${k}x`]: v } : t));
}

const exec = tableOf({
  command: text,
  args: fc.array(text, { maxLength: 3 }),
  env: fc.dictionary(key, text, { maxKeys: 3 }),
});
const security = tableOf({
  user,
  no_new_privileges: fc.boolean(),
  capabilities: fc.array(capability, { maxLength: 2 }),
});
const container = tableOf({
  image: text,
  runtime: pick('auto', 'docker', 'podman', 'lxc'),
  pull_policy: pick('always', 'if-not-present', 'never', 'sometimes'),
  network_mode: pick('bridge', 'host', ''),
  user,
  privileged: fc.boolean(),
  command: fc.array(text, { maxLength: 2 }),
  env: fc.dictionary(key, text, { maxKeys: 2 }),
  ports: fc.array(tableOf({ host_port: num, container_port: num }), { maxLength: 2 }),
  mounts: fc.array(tableOf({ source: text, target: text, read_only: fc.boolean() }), { maxLength: 2 }),
  resources: tableOf({ memory_mb: num, pids_limit: num }),
  capabilities: fc.array(capability, { maxLength: 2 }),
  pid_mode: pick('host', '', 'container:x'),
  ipc_mode: pick('private', ''),
  uts_mode: pick('host'),
  userns_mode: pick('host', ''),
  devices: fc.array(pick('/dev/ttyUSB0', '/tmp/x'), { maxLength: 2 }),
});
const health = tableOf({ check, interval: duration, timeout: duration, failure_threshold: num });
const runShape = {
  type: pick('process', 'container', 'vm'),
  restart_policy: pick('always', 'on-failure', 'never', 'sometimes'),
  exec,
  security,
  container,
  health,
  update_strategy: pick('stop-first', 'start-first', 'random'),
  replicas: num,
};
const run = tableOf(runShape);
const service = tableOf({
  ...runShape,
  requires: fc.array(text, { maxLength: 2 }),
  after: fc.array(text, { maxLength: 2 }),
  exports: fc.dictionary(key, scalar, { maxKeys: 2 }),
});
const recipe = tableOf(
  {
    metadata: tableOf({ name: rdns, version, description: text }),
    artifacts: fc.array(
      tableOf({ uri: text, sha256: pick('a'.repeat(64), 'A'.repeat(64), 'abc', 'g'.repeat(64)), unpack: fc.boolean() }),
      { maxLength: 2 },
    ),
    config: fc.dictionary(key, configValue, { maxKeys: 3 }),
    exports: fc.dictionary(key, scalar, { maxKeys: 2 }),
    lifecycle: tableOf({
      install: tableOf({ script: text, timeout: duration }),
      run,
      services: fc.dictionary(key, service, { maxKeys: 2 }),
    }),
    members: fc.array(tableOf({ name: text, recipe: text }), { maxLength: 2 }),
    dependencies: fc.array(tableOf({ name: rdns, version: range, type: pick('hard', 'ordering', 'soft') }), {
      maxLength: 3,
    }),
  },
  0.02,
);
/** Mostly valid recipes, so the fast path's accepting side is exercised as much as its giving up. */
const validish = fc.record({
  metadata: fc.record({ name: rdns, version, description: maybe(text) }, { requiredKeys: ['name', 'version'] }),
  lifecycle: fc.record({
    run: fc.record(
      {
        type: pick('process'),
        exec: fc.record({ command: pick('./bin/x'), args: fc.array(text, { maxLength: 2 }) }),
        health: maybe(fc.record({ check, interval: maybe(duration) }, { requiredKeys: ['check'] })),
        security: maybe(security),
      },
      { requiredKeys: ['exec'] },
    ),
  }),
  dependencies: maybe(
    fc.array(
      fc.record(
        { name: rdns, version: maybe(range), type: maybe(pick('hard', 'ordering')) },
        { requiredKeys: ['name'] },
      ),
      { maxLength: 3 },
    ),
  ),
  config: maybe(fc.dictionary(key, configValue, { maxKeys: 3 })),
});

/** Through TOML and back, so tables are what smol-toml builds (null-prototype objects, its own number types). */
function viaToml(value: unknown): unknown {
  const clean = JSON.parse(JSON.stringify(value, (_k, v) => (v === undefined ? undefined : v)));
  try {
    return parse(stringify(clean));
  } catch {
    return clean;
  }
}

describe('recipe fast path', () => {
  it('agrees with zod on generated recipes, valid or not', () => {
    fc.assert(
      fc.property(recipe, (r) => agrees(fastRecipe, recipeSchema, viaToml(r)) && agrees(fastRecipe, recipeSchema, r)),
      { numRuns: 1500 },
    );
  });

  it('agrees with zod on mostly valid recipes, and takes most of them', () => {
    let taken = 0;
    let valid = 0;
    fc.assert(
      fc.property(validish, (r) => {
        const raw = viaToml(r);
        // A "__proto__" key is left to zod on purpose.
        const odd = JSON.stringify(r).includes('"__proto__":');
        if (!odd && safeParseSchema(recipeSchema, raw).success) valid++;
        if (!odd && fastRecipe(raw) !== undefined) taken++;
        return agrees(fastRecipe, recipeSchema, raw);
      }),
      { numRuns: 2000 },
    );
    expect(valid).toBeGreaterThan(100);
    expect(taken).toBe(valid);
  });

  it('takes every valid recipe of the repository and its examples, and builds what zod builds', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (e.name.endsWith('.toml')) files.push(join(dir, e.name));
      }
    };
    walk('recipes');
    walk('examples');
    let checked = 0;
    for (const f of files) {
      let raw: unknown;
      try {
        raw = parse(readFileSync(f, 'utf8'));
      } catch {
        continue;
      }
      const isRecipe = typeof raw === 'object' && raw !== null && 'metadata' in raw;
      const schema = isRecipe ? recipeSchema : planSchema;
      const fast = isRecipe ? fastRecipe : fastPlan;
      if (!safeParseSchema(schema, raw).success) continue;
      expect(fast(raw), f).toBeDefined();
      agrees(fast, schema, raw);
      checked++;
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('leaves errors to zod: same diagnostics, file, path and line', () => {
    const r = parseRecipe(
      'recipes/x.toml',
      '[metadata]\nname = "com.acme.x"\nversion = "1.0"\n\n[lifecycle.run.exec]\ncommand = "x"\n\n[lifecycle.run.health]\ncheck = "ftp://x"\n',
    );
    expect(r.recipe).toBeUndefined();
    expect(r.diagnostics.map((d) => [d.code, d.path, d.line])).toEqual([
      ['KS_BAD_SEMVER', 'metadata.version', 3],
      ['KS_BAD_HEALTH_CHECK', 'lifecycle.run.health.check', 9],
    ]);
  });
});

describe('plan fast path', () => {
  const entry = tableOf({
    name: pick('api', 'web-1', 'a..b', '-x', 'A.b_c', ''),
    recipe: pick('recipes/a.toml', '', '../x.toml'),
    config: fc.dictionary(key, configValue, { maxKeys: 2 }),
  });
  const plan = tableOf({ components: fc.array(entry, { maxLength: 4 }) }, 0.05);
  it('agrees with zod on generated plans', () => {
    fc.assert(
      fc.property(plan, (p) => agrees(fastPlan, planSchema, viaToml(p)) && agrees(fastPlan, planSchema, p)),
      { numRuns: 2000 },
    );
  });
  it('a plan zod refuses is reported as before', () => {
    const p = parsePlan('plans/p.toml', '[[components]]\nname = "api"\nrecipe = "recipes/a.toml"\nbogus = 1\n');
    expect(p.plan).toBeUndefined();
    expect(p.diagnostics.map((d) => [d.code, d.path, d.line])).toEqual([['KS_UNKNOWN_KEY', 'components[0].bogus', 4]]);
  });
});
