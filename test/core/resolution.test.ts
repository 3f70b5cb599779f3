// Resolution (SPEC §2 validation, §4 layers): plan and recipe texts in, desired state or located diagnostics out.
import { describe, it, expect } from 'vitest';
import { CODES, type Diagnostic } from '../../src/core/errors.js';
import { resolveDesiredState, type Resolution } from '../../src/core/desired-state.js';
import { parsePlan } from '../../src/core/plan.js';
import { parseRecipe, type ParsedRecipe } from '../../src/core/recipe.js';

const PLAN_FILE = 'plans/device.toml';

interface Dep {
  name: string;
  version?: string;
  type?: 'hard' | 'ordering';
}

/**
 * A process recipe whose lines are fixed: dependency k's header is on line 9 + 5k, its `name` on 10 + 5k,
 * its `version` (or a comment standing in) on 11 + 5k and its `type` on 12 + 5k.
 */
function recipeText(name: string, version: string, deps: Dep[] = []): string {
  const lines = [
    '[metadata]', // 1
    `name = "${name}"`, // 2
    `version = "${version}"`, // 3
    '', // 4
    '[lifecycle.run]', // 5
    '[lifecycle.run.exec]', // 6
    'command = "./run"', // 7
  ];
  for (const dep of deps)
    lines.push(
      '', // 8 + 5k
      '[[dependencies]]', // 9 + 5k
      `name = "${dep.name}"`, // 10 + 5k
      dep.version === undefined ? '# any version' : `version = "${dep.version}"`, // 11 + 5k
      `type = "${dep.type ?? 'hard'}"`, // 12 + 5k
    );
  return lines.join('\n') + '\n';
}

/** A component of a test plan: its plan name, and the recipe it uses (file recipes/<file>.toml). */
interface Component {
  name: string;
  file: string;
}

function planText(components: Component[]): string {
  return components.map((c) => `[[components]]\nname = "${c.name}"\nrecipe = "recipes/${c.file}.toml"\n`).join('\n');
}

/** Parses the plan and every recipe text (keyed by file stem) and resolves them, as the load phase does. */
function resolve(components: Component[], recipes: Record<string, string>): Resolution {
  const plan = parsePlan(PLAN_FILE, planText(components));
  expect(plan.diagnostics).toEqual([]);
  const parsed = new Map<string, ParsedRecipe>();
  for (const [stem, text] of Object.entries(recipes))
    parsed.set(`recipes/${stem}.toml`, parseRecipe(`recipes/${stem}.toml`, text));
  return resolveDesiredState(plan, parsed);
}

/** Components named after their recipe file, in plan order. */
const named = (...names: string[]): Component[] => names.map((n) => ({ name: n, file: n }));

function diagnosticsOf(r: Resolution): Diagnostic[] {
  if (r.ok) throw new Error(`expected the resolution to fail, got layers ${JSON.stringify(r.state.layers)}`);
  return r.diagnostics;
}

const where = (diags: Diagnostic[]) => diags.map((x) => ({ code: x.code, file: x.file, path: x.path, line: x.line }));

describe('dependencies that do not resolve', () => {
  interface Row {
    name: string;
    plan: Component[];
    recipes: Record<string, string>;
    expected: Array<{ code: Diagnostic['code']; file: string; path: string; line: number }>;
    message: RegExp;
  }
  const rows: Row[] = [
    {
      name: 'a dependency no component provides',
      plan: named('db', 'api'),
      recipes: {
        db: recipeText('com.acme.db', '2.7.5'),
        api: recipeText('com.acme.api', '1.0.0', [{ name: 'com.acme.cache' }]),
      },
      expected: [{ code: CODES.DEP_MISSING, file: 'recipes/api.toml', path: 'dependencies[0].name', line: 10 }],
      message: /^component "api" depends on com\.acme\.cache, which no component of plans\/device\.toml provides$/,
    },
    {
      name: 'the second dependency is the missing one',
      plan: named('db', 'api'),
      recipes: {
        db: recipeText('com.acme.db', '2.7.5'),
        api: recipeText('com.acme.api', '1.0.0', [
          { name: 'com.acme.db' },
          { name: 'com.acme.cache', type: 'ordering' },
        ]),
      },
      expected: [{ code: CODES.DEP_MISSING, file: 'recipes/api.toml', path: 'dependencies[1].name', line: 15 }],
      message: /com\.acme\.cache/,
    },
    {
      name: 'a dependency on a plan component name rather than a recipe name',
      plan: named('db', 'api'),
      recipes: {
        db: recipeText('com.acme.db', '2.7.5'),
        api: recipeText('com.acme.api', '1.0.0', [{ name: 'db.local' }]),
      },
      expected: [{ code: CODES.DEP_MISSING, file: 'recipes/api.toml', path: 'dependencies[0].name', line: 10 }],
      message: /depends on db\.local/,
    },
    {
      name: 'two components provide the dependency',
      plan: named('db1', 'db2', 'api'),
      recipes: {
        db1: recipeText('com.acme.db', '2.7.5'),
        db2: recipeText('com.acme.db', '2.8.0'),
        api: recipeText('com.acme.api', '1.0.0', [{ name: 'com.acme.db' }]),
      },
      expected: [{ code: CODES.DEP_AMBIGUOUS, file: 'recipes/api.toml', path: 'dependencies[0].name', line: 10 }],
      message: /^component "api" depends on com\.acme\.db, which several components provide: db1, db2$/,
    },
    {
      name: 'two components from one recipe file provide the dependency',
      plan: [
        { name: 'db-a', file: 'db' },
        { name: 'db-b', file: 'db' },
        { name: 'api', file: 'api' },
      ],
      recipes: {
        db: recipeText('com.acme.db', '2.7.5'),
        api: recipeText('com.acme.api', '1.0.0', [{ name: 'com.acme.db' }]),
      },
      expected: [{ code: CODES.DEP_AMBIGUOUS, file: 'recipes/api.toml', path: 'dependencies[0].name', line: 10 }],
      message: /db-a, db-b/,
    },
    {
      name: 'a range the provider does not satisfy',
      plan: named('db', 'api'),
      recipes: {
        db: recipeText('com.acme.db', '2.6.9'),
        api: recipeText('com.acme.api', '1.0.0', [{ name: 'com.acme.db', version: '>=2.7.0' }]),
      },
      expected: [
        { code: CODES.DEP_VERSION_MISMATCH, file: 'recipes/api.toml', path: 'dependencies[0].version', line: 11 },
      ],
      message: /^component "api" needs com\.acme\.db >=2\.7\.0, but "db" is 2\.6\.9$/,
    },
    {
      name: 'a caret range across a major version',
      plan: named('db', 'api'),
      recipes: {
        db: recipeText('com.acme.db', '3.0.0'),
        api: recipeText('com.acme.api', '1.0.0', [{ name: 'com.acme.db', version: '^2.7' }]),
      },
      expected: [
        { code: CODES.DEP_VERSION_MISMATCH, file: 'recipes/api.toml', path: 'dependencies[0].version', line: 11 },
      ],
      message: /\^2\.7, but "db" is 3\.0\.0/,
    },
    {
      name: 'an ordering dependency is version-checked too',
      plan: named('db', 'tel'),
      recipes: {
        db: recipeText('com.acme.db', '2.7.5'),
        tel: recipeText('com.acme.tel', '1.0.0', [{ name: 'com.acme.db', version: '<2', type: 'ordering' }]),
      },
      expected: [
        { code: CODES.DEP_VERSION_MISMATCH, file: 'recipes/tel.toml', path: 'dependencies[0].version', line: 11 },
      ],
      message: /needs com\.acme\.db <2/,
    },
  ];

  it.each(rows.map((r) => [r.name, r] as const))('%s', (_name, row) => {
    const diags = diagnosticsOf(resolve(row.plan, row.recipes));
    expect(where(diags)).toEqual(row.expected);
    expect(diags[0]!.message).toMatch(row.message);
  });

  it('every unresolved dependency of the revision is reported at once, sorted by file and line', () => {
    const diags = diagnosticsOf(
      resolve(named('web', 'db', 'api'), {
        web: recipeText('com.acme.web', '1.0.0', [{ name: 'com.acme.api', version: '>=2' }]),
        db: recipeText('com.acme.db', '2.7.5'),
        api: recipeText('com.acme.api', '1.0.0', [
          { name: 'com.acme.cache' },
          { name: 'com.acme.db', version: '~2.6' },
        ]),
      }),
    );
    expect(where(diags)).toEqual([
      { code: CODES.DEP_MISSING, file: 'recipes/api.toml', path: 'dependencies[0].name', line: 10 },
      { code: CODES.DEP_VERSION_MISMATCH, file: 'recipes/api.toml', path: 'dependencies[1].version', line: 16 },
      { code: CODES.DEP_VERSION_MISMATCH, file: 'recipes/web.toml', path: 'dependencies[0].version', line: 11 },
    ]);
  });

  it.each([
    ['>=2.7.0', '2.7.0'],
    ['^2.7', '2.9.1'],
    ['2.x', '2.0.0'],
    ['>=2.7.0', '2.8.0-rc.1'],
  ])('range %s is satisfied by %s', (range, version) => {
    const r = resolve(named('db', 'api'), {
      db: recipeText('com.acme.db', version),
      api: recipeText('com.acme.api', '1.0.0', [{ name: 'com.acme.db', version: range }]),
    });
    expect(r.ok).toBe(true);
  });
});

describe('dependency cycles', () => {
  const dep = (name: string, type: 'hard' | 'ordering' = 'hard'): Dep => ({ name: `com.acme.${name}`, type });
  const rec = (name: string, ...deps: Dep[]) => recipeText(`com.acme.${name}`, '1.0.0', deps);

  const rows: Array<{
    name: string;
    plan: Component[];
    recipes: Record<string, string>;
    expected: Array<{ file: string; path: string; line: number; message: string }>;
  }> = [
    {
      name: 'length 1: a component that depends on itself',
      plan: named('a'),
      recipes: { a: rec('a', dep('a')) },
      expected: [{ file: 'recipes/a.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: a → a' }],
    },
    {
      name: 'length 2',
      plan: named('a', 'b'),
      recipes: { a: rec('a', dep('b')), b: rec('b', dep('a')) },
      expected: [{ file: 'recipes/a.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: a → b → a' }],
    },
    {
      name: 'length 3, named from the first component in plan order, located at its edge into the cycle',
      plan: named('c', 'a', 'b'),
      recipes: { a: rec('a', dep('b')), b: rec('b', dep('c')), c: rec('c', dep('a')) },
      expected: [
        { file: 'recipes/c.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: c → a → b → c' },
      ],
    },
    {
      name: 'length 3, the cycle edge is the second dependency',
      plan: named('a', 'b', 'c', 'd'),
      recipes: { a: rec('a', dep('d'), dep('b')), b: rec('b', dep('c')), c: rec('c', dep('a')), d: rec('d') },
      expected: [
        { file: 'recipes/a.toml', path: 'dependencies[1]', line: 14, message: 'dependency cycle: a → b → c → a' },
      ],
    },
    {
      name: 'an ordering edge closes a cycle too (it orders starts)',
      plan: named('a', 'b'),
      recipes: { a: rec('a', dep('b', 'ordering')), b: rec('b', dep('a')) },
      expected: [{ file: 'recipes/a.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: a → b → a' }],
    },
    {
      name: 'two independent cycles are both reported',
      plan: named('a', 'b', 'free', 'c', 'd'),
      recipes: {
        a: rec('a', dep('b')),
        b: rec('b', dep('a')),
        free: rec('free'),
        c: rec('c', dep('free'), dep('d')),
        d: rec('d', dep('c')),
      },
      expected: [
        { file: 'recipes/a.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: a → b → a' },
        { file: 'recipes/c.toml', path: 'dependencies[1]', line: 14, message: 'dependency cycle: c → d → c' },
      ],
    },
    {
      name: 'a self-loop and a 2-cycle in one plan',
      plan: named('s', 'a', 'b'),
      recipes: { s: rec('s', dep('s')), a: rec('a', dep('b')), b: rec('b', dep('a')) },
      expected: [
        { file: 'recipes/a.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: a → b → a' },
        { file: 'recipes/s.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: s → s' },
      ],
    },
    {
      name: 'components hanging off a cycle are not part of it',
      plan: named('top', 'a', 'b', 'base'),
      recipes: {
        top: rec('top', dep('a')),
        a: rec('a', dep('b'), dep('base')),
        b: rec('b', dep('a')),
        base: rec('base'),
      },
      expected: [{ file: 'recipes/a.toml', path: 'dependencies[0]', line: 9, message: 'dependency cycle: a → b → a' }],
    },
  ];

  it.each(rows.map((r) => [r.name, r] as const))('%s', (_name, row) => {
    const diags = diagnosticsOf(resolve(row.plan, row.recipes));
    expect(diags.map((x) => ({ file: x.file, path: x.path, line: x.line, message: x.message }))).toEqual(row.expected);
    for (const x of diags) expect(x.code).toBe(CODES.DEP_CYCLE);
    for (const x of diags) expect(x.hint).toMatch(/break the cycle/);
  });
});

describe('a valid revision: the four-component stack (reference/four-component-stack.md)', () => {
  const SHA = '4d1b'.padEnd(64, '0');
  const recipes = {
    'com.acme.influxdb': [
      '[metadata]',
      'name = "com.acme.influxdb"',
      'version = "2.7.5"',
      '[[artifacts]]',
      'uri = "https://artifacts.acme.com/influxdb-2.7.5-linux-arm64.tar.gz"',
      `sha256 = "${SHA}"`,
      'unpack = true',
      '[lifecycle.install]',
      'script = "mkdir -p data && chmod +x ./influxd"',
      '[lifecycle.run]',
      'restart_policy = "always"',
      '[lifecycle.run.exec]',
      'command = "./influxd"',
      'args = ["--bolt-path", "data/influxd.bolt", "--engine-path", "data/engine"]',
      '[lifecycle.run.security]',
      'user = "influx:influx"',
      'no_new_privileges = true',
      'capabilities = []',
      '[lifecycle.run.health]',
      'check = "http://127.0.0.1:8086/health"',
      'interval = "10s"',
      'timeout = "3s"',
      'failure_threshold = 6',
    ].join('\n'),
    'com.acme.api': [
      '[metadata]',
      'name = "com.acme.api"',
      'version = "1.4.0"',
      '[lifecycle.run.exec]',
      'command = "./api"',
      '[[dependencies]]',
      'name = "com.acme.influxdb"',
      'version = ">=2.7.0"',
      'type = "hard"',
    ].join('\n'),
    'com.acme.telemetry': [
      '[metadata]',
      'name = "com.acme.telemetry"',
      'version = "1.29.0"',
      '[[dependencies]]',
      'name = "com.acme.influxdb"',
      'type = "ordering"',
      '[lifecycle.run]',
      'restart_policy = "always"',
      '[lifecycle.run.exec]',
      'command = "./telemetry"',
      'args = ["--config", "telemetry.conf"]',
      '[lifecycle.run.security]',
      'user = "telemetry:telemetry"',
      'no_new_privileges = true',
      'capabilities = []',
      '[lifecycle.run.health]',
      'check = "cmd:./telemetry --check"',
      'interval = "30s"',
    ].join('\n'),
    'com.acme.web': [
      '[metadata]',
      'name = "com.acme.web"',
      'version = "1.27.0"',
      '[[dependencies]]',
      'name = "com.acme.api"',
      'type = "hard"',
      '[lifecycle.run]',
      'type = "container"',
      'restart_policy = "always"',
      '[lifecycle.run.container]',
      'image = "docker.io/library/nginx:1.27-alpine"',
      'runtime = "auto"',
      'pull_policy = "if-not-present"',
      'network_mode = "bridge"',
      'user = "101:101"',
      'privileged = false',
      '[[lifecycle.run.container.ports]]',
      'host_port = 80',
      'container_port = 80',
      '[[lifecycle.run.container.mounts]]',
      'source = "/srv/acme/www"',
      'target = "/usr/share/nginx/html"',
      'read_only = true',
      '[lifecycle.run.container.resources]',
      'memory_mb = 128',
      'pids_limit = 64',
      '[lifecycle.run.health]',
      'check = "http://127.0.0.1:80/"',
      'interval = "15s"',
    ].join('\n'),
  };
  const stack = (order: string[], rename: Record<string, string> = {}): Component[] =>
    order.map((n) => ({ name: rename[n] ?? n, file: `com.acme.${n}` }));

  function state(components: Component[]) {
    const r = resolve(components, recipes);
    if (!r.ok) throw new Error(`expected a valid revision:\n${JSON.stringify(r.diagnostics, null, 2)}`);
    return r.state;
  }

  it('gives the layers and start order of the reference', () => {
    const s = state(stack(['influxdb', 'api', 'telemetry', 'web']));
    expect(s.planFile).toBe(PLAN_FILE);
    expect(s.layers).toEqual([['influxdb'], ['api', 'telemetry'], ['web']]);
    expect(s.startOrder).toEqual(['influxdb', 'api', 'telemetry', 'web']);
  });

  it('resolves each dependency to the plan component that provides it, with its type', () => {
    const s = state(stack(['influxdb', 'api', 'telemetry', 'web']));
    expect(s.components.map((c) => [c.name, c.index, c.recipePath, c.dependencies])).toEqual([
      ['influxdb', 0, 'recipes/com.acme.influxdb.toml', []],
      ['api', 1, 'recipes/com.acme.api.toml', [{ component: 'influxdb', type: 'hard' }]],
      ['telemetry', 2, 'recipes/com.acme.telemetry.toml', [{ component: 'influxdb', type: 'ordering' }]],
      ['web', 3, 'recipes/com.acme.web.toml', [{ component: 'api', type: 'hard' }]],
    ]);
    expect(s.components[0]!.recipe.lifecycle.run.health).toEqual({
      check: 'http://127.0.0.1:8086/health',
      interval: 10_000,
      timeout: 3_000,
      failure_threshold: 6,
    });
    expect(s.components[3]!.recipe.lifecycle.run.type).toBe('container');
  });

  it('resolves by recipe name but reports plan component names', () => {
    const s = state(stack(['influxdb', 'api', 'telemetry', 'web'], { influxdb: 'tsdb', api: 'backend' }));
    expect(s.layers).toEqual([['tsdb'], ['backend', 'telemetry'], ['web']]);
    expect(s.components.find((c) => c.name === 'web')!.dependencies).toEqual([{ component: 'backend', type: 'hard' }]);
    expect(s.components.find((c) => c.name === 'telemetry')!.dependencies).toEqual([
      { component: 'tsdb', type: 'ordering' },
    ]);
  });

  it('keeps plan order within a layer, whatever order the plan lists the layers in', () => {
    const s = state(stack(['web', 'telemetry', 'api', 'influxdb']));
    expect(s.layers).toEqual([['influxdb'], ['telemetry', 'api'], ['web']]);
    expect(s.startOrder).toEqual(['influxdb', 'telemetry', 'api', 'web']);
    expect(s.components.map((c) => c.name)).toEqual(['web', 'telemetry', 'api', 'influxdb']);
  });

  it('gives every component a distinct content hash', () => {
    const s = state(stack(['influxdb', 'api', 'telemetry', 'web']));
    const hashes = s.components.map((c) => c.hash);
    expect(new Set(hashes).size).toBe(4);
    for (const h of hashes) expect(h).toMatch(/\S{8,}/);
  });
});

describe('diagnostics of the inputs are passed through', () => {
  it('an invalid recipe stops resolution and its diagnostics are returned', () => {
    const diags = diagnosticsOf(
      resolve(named('db', 'api'), {
        db: recipeText('com.acme.db', '2.7'),
        api: recipeText('com.acme.api', '1.0.0', [{ name: 'com.acme.db' }]),
      }),
    );
    expect(where(diags)).toEqual([
      { code: CODES.BAD_SEMVER, file: 'recipes/db.toml', path: 'metadata.version', line: 3 },
    ]);
  });

  it('plan diagnostics and recipe diagnostics come back together, sorted by file then line', () => {
    const plan = parsePlan(PLAN_FILE, 'device = "x"\n' + planText(named('db', 'db')));
    const parsed = new Map([
      ['recipes/db.toml', parseRecipe('recipes/db.toml', recipeText('com.acme.db', 'latest', [{ name: 'DB' }]))],
    ]);
    const diags = diagnosticsOf(resolveDesiredState(plan, parsed));
    expect(where(diags)).toEqual([
      { code: CODES.UNKNOWN_KEY, file: PLAN_FILE, path: 'device', line: 1 },
      { code: CODES.DUPLICATE_COMPONENT, file: PLAN_FILE, path: 'components[1].name', line: 7 },
      { code: CODES.BAD_SEMVER, file: 'recipes/db.toml', path: 'metadata.version', line: 3 },
      { code: CODES.BAD_NAME, file: 'recipes/db.toml', path: 'dependencies[0].name', line: 10 },
    ]);
  });
});
