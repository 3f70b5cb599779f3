// Every recipe validation rule of SPEC §2, table-driven: a valid base recipe with one thing changed, and the
// exact diagnostics (code, rendered TOML path, line) it must produce.
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CODES, sortDiagnostics, type Diagnostic, type ErrorCode } from '../../src/core/errors.js';
import { parseRecipe } from '../../src/core/recipe.js';
import { PROJECT_ROOT } from '../support/example-repo.js';

const FILE = 'recipes/com.acme.api.toml';
const SHA = '8546f0766d6c37256ba39c3a7d5a5de00f187f8b2880ca8bf825d733154f054e';

// Line n of a base is its array index + 1. Each blank line belongs to the table above it, so a row can add a
// key to that table by replacing the blank line, and no other line moves.
const PROCESS = [
  '# a valid process recipe', // 1 (top level)
  '[metadata]', // 2
  'name = "com.acme.api"', // 3
  'version = "1.4.0"', // 4
  'description = "ACME API"', // 5
  '', // 6 (metadata)
  '[[artifacts]]', // 7
  'uri = "https://artifacts.acme.com/api-1.4.0.tar.gz"', // 8
  `sha256 = "${SHA}"`, // 9
  'unpack = true', // 10
  '', // 11 (artifacts[0])
  '[lifecycle.install]', // 12
  'script = "mkdir -p data"', // 13
  'timeout = "5m"', // 14
  '', // 15 (lifecycle.install)
  '[lifecycle.run]', // 16
  'type = "process"', // 17
  'restart_policy = "always"', // 18
  '', // 19 (lifecycle.run)
  '[lifecycle.run.exec]', // 20
  'command = "./api"', // 21
  'args = ["--port", "8080"]', // 22
  'env = { MODE = "prod" }', // 23
  '', // 24 (exec)
  '[lifecycle.run.security]', // 25
  'user = "api:api"', // 26
  'no_new_privileges = true', // 27
  'capabilities = ["CAP_NET_BIND_SERVICE"]', // 28
  '', // 29 (security)
  '[lifecycle.run.health]', // 30
  'check = "http://127.0.0.1:8080/health"', // 31
  'interval = "10s"', // 32
  'timeout = "3s"', // 33
  'failure_threshold = 3', // 34
  '', // 35 (health)
  '[[dependencies]]', // 36
  'name = "com.acme.influxdb"', // 37
  'version = ">=2.7.0"', // 38
  'type = "hard"', // 39
  '', // 40 (dependencies[0]); appended lines start at 41
];

const CONTAINER = [
  '# a valid container recipe', // 1
  '[metadata]', // 2
  'name = "com.acme.web"', // 3
  'version = "1.27.0"', // 4
  '', // 5
  '[lifecycle.run]', // 6
  'type = "container"', // 7
  'restart_policy = "on-failure"', // 8
  '', // 9
  '[lifecycle.run.container]', // 10
  'image = "docker.io/library/nginx:1.27-alpine"', // 11
  'runtime = "auto"', // 12
  'pull_policy = "if-not-present"', // 13
  'network_mode = "bridge"', // 14
  'user = "101:101"', // 15
  'privileged = false', // 16
  'command = ["nginx", "-g", "daemon off;"]', // 17
  'env = { TZ = "UTC" }', // 18
  '', // 19 (container)
  '[[lifecycle.run.container.ports]]', // 20
  'host_port = 8080', // 21
  'container_port = 80', // 22
  '', // 23 (ports[0])
  '[[lifecycle.run.container.ports]]', // 24
  'host_port = 8443', // 25
  'container_port = 443', // 26
  '', // 27 (ports[1])
  '[[lifecycle.run.container.mounts]]', // 28
  'source = "/srv/acme/www"', // 29
  'target = "/usr/share/nginx/html"', // 30
  'read_only = true', // 31
  '', // 32 (mounts[0])
  '[lifecycle.run.container.resources]', // 33
  'memory_mb = 128', // 34
  'pids_limit = 64', // 35
  '', // 36 (resources)
  '[lifecycle.run.health]', // 37
  'check = "tcp://127.0.0.1:8080"', // 38
  'interval = "15s"', // 39
  '', // 40 (health)
  '[[dependencies]]', // 41
  'name = "com.acme.api"', // 42
  'type = "ordering"', // 43
  '', // 44; appended lines start at 45
];

/** The base with lines replaced (1-based; '' blanks a line). Replacements are single lines, so no line moves. */
function edit(base: readonly string[], changes: Record<number, string>, ...appended: string[]): string {
  const lines = [...base];
  for (const [key, text] of Object.entries(changes)) {
    const n = Number(key);
    if (!(n >= 1 && n <= lines.length) || text.includes('\n')) throw new Error(`bad edit of line ${key}`);
    lines[n - 1] = text;
  }
  return [...lines, ...appended].join('\n');
}

/** Blanks lines from..to inclusive. */
function blank(from: number, to: number): Record<number, string> {
  const out: Record<number, string> = {};
  for (let n = from; n <= to; n++) out[n] = '';
  return out;
}

interface Expected {
  code: ErrorCode;
  path: string;
  line: number | undefined;
  message?: RegExp;
  hint?: RegExp | string;
}

const d = (
  code: ErrorCode,
  path: string,
  line: number | undefined,
  more: Partial<Pick<Expected, 'message' | 'hint'>> = {},
): Expected => ({
  code,
  path,
  line,
  ...more,
});

interface Row {
  name: string;
  toml: string;
  expected: Expected[];
}

/** Compares as a sorted list (ordering is tested on its own below), and checks message and hint where given. */
function expectDiagnostics(actual: readonly Diagnostic[], expected: readonly Expected[]): void {
  const got = sortDiagnostics(actual);
  expect(got.map((g) => ({ code: g.code, path: g.path, line: g.line }))).toEqual(
    expected.map((e) => ({ code: e.code, path: e.path, line: e.line })),
  );
  for (const [i, e] of expected.entries()) {
    const g = got[i]!;
    expect(g.file).toBe(FILE);
    if (e.message) expect(g.message).toMatch(e.message);
    if (typeof e.hint === 'string') expect(g.hint).toBe(e.hint);
    else if (e.hint) expect(g.hint).toMatch(e.hint);
  }
}

function runRows(rows: readonly Row[]): void {
  it.each(rows.map((r) => [r.name, r] as const))('%s', (_name, row) => {
    const result = parseRecipe(FILE, row.toml);
    expectDiagnostics(result.diagnostics, row.expected);
    expect(result.recipe).toBeUndefined();
  });
}

describe('valid recipes', () => {
  it('the process base recipe parses with defaults applied and durations in milliseconds', () => {
    const r = parseRecipe(FILE, edit(PROCESS, {}));
    expect(r.diagnostics).toEqual([]);
    expect(r.recipe).toEqual({
      metadata: { name: 'com.acme.api', version: '1.4.0', description: 'ACME API' },
      artifacts: [{ uri: 'https://artifacts.acme.com/api-1.4.0.tar.gz', sha256: SHA, unpack: true }],
      lifecycle: {
        install: { script: 'mkdir -p data', timeout: 300_000 },
        run: {
          type: 'process',
          restart_policy: 'always',
          exec: { command: './api', args: ['--port', '8080'], env: { MODE: 'prod' } },
          security: { user: 'api:api', no_new_privileges: true, capabilities: ['CAP_NET_BIND_SERVICE'] },
          health: { check: 'http://127.0.0.1:8080/health', interval: 10_000, timeout: 3_000, failure_threshold: 3 },
        },
      },
      dependencies: [{ name: 'com.acme.influxdb', version: '>=2.7.0', type: 'hard' }],
    });
  });

  it('the container base recipe parses', () => {
    const r = parseRecipe(FILE, edit(CONTAINER, {}));
    expect(r.diagnostics).toEqual([]);
    expect(r.recipe?.lifecycle?.run?.container?.ports).toEqual([
      { host_port: 8080, container_port: 80 },
      { host_port: 8443, container_port: 443 },
    ]);
    expect(r.recipe?.dependencies).toEqual([{ name: 'com.acme.api', type: 'ordering' }]);
  });

  it('a minimal recipe gets every default', () => {
    const r = parseRecipe(
      FILE,
      [
        '[metadata]',
        'name = "com.acme.min"',
        'version = "0.1.0"',
        '[lifecycle.run.exec]',
        'command = "true"',
        '[lifecycle.run.health]',
        'check = "cmd:true"',
      ].join('\n'),
    );
    expect(r.diagnostics).toEqual([]);
    expect(r.recipe).toEqual({
      metadata: { name: 'com.acme.min', version: '0.1.0' },
      artifacts: [],
      lifecycle: {
        run: {
          type: 'process',
          restart_policy: 'always',
          exec: { command: 'true', args: [], env: {} },
          health: { check: 'cmd:true', interval: 10_000, timeout: 3_000, failure_threshold: 3 },
        },
      },
      dependencies: [],
    });
  });

  const exampleRecipes = readdirSync(join(PROJECT_ROOT, 'recipes')).filter((f) => f.endsWith('.toml'));
  it('the example repository has recipes to check', () => expect(exampleRecipes.length).toBeGreaterThanOrEqual(4));
  it.each(exampleRecipes)('example recipes/%s is valid', (f) => {
    const r = parseRecipe(`recipes/${f}`, readFileSync(join(PROJECT_ROOT, 'recipes', f), 'utf8'));
    expect(r.diagnostics).toEqual([]);
    expect(r.recipe).toBeDefined();
  });
});

describe('unknown keys, at every level', () => {
  runRows([
    {
      name: 'top level',
      toml: edit(PROCESS, { 1: 'colour = "blue"' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'colour', 1, {
          message: /unknown key "colour"/,
          hint: 'known keys: metadata, artifacts, config, exports, lifecycle, members, dependencies',
        }),
      ],
    },
    {
      name: 'metadata',
      toml: edit(PROCESS, { 6: 'descripton = "x"' }),
      expected: [d(CODES.UNKNOWN_KEY, 'metadata.descripton', 6, { hint: 'did you mean "description"?' })],
    },
    {
      name: 'artifacts[0]',
      toml: edit(PROCESS, { 11: 'unpak = false' }),
      expected: [d(CODES.UNKNOWN_KEY, 'artifacts[0].unpak', 11, { hint: 'did you mean "unpack"?' })],
    },
    {
      name: 'lifecycle (a table)',
      toml: edit(PROCESS, {}, '[lifecycle.stop]', 'script = "x"'),
      expected: [d(CODES.UNKNOWN_KEY, 'lifecycle.stop', 41, { hint: 'known keys: install, run, services, update' })],
    },
    {
      name: 'lifecycle.install',
      toml: edit(PROCESS, { 15: 'timout = "1m"' }),
      expected: [d(CODES.UNKNOWN_KEY, 'lifecycle.install.timout', 15, { hint: 'did you mean "timeout"?' })],
    },
    {
      name: 'lifecycle.run: a typo gets "did you mean"',
      toml: edit(PROCESS, { 19: 'restart_polcy = "never"' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.restart_polcy', 19, {
          message: /unknown key "restart_polcy"/,
          hint: 'did you mean "restart_policy"?',
        }),
      ],
    },
    {
      name: 'lifecycle.run.exec',
      toml: edit(PROCESS, { 24: 'workdir = "/tmp"' }),
      expected: [d(CODES.UNKNOWN_KEY, 'lifecycle.run.exec.workdir', 24, { hint: 'known keys: command, args, env' })],
    },
    {
      name: 'lifecycle.run.security',
      toml: edit(PROCESS, { 29: 'capabilties = []' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.security.capabilties', 29, { hint: 'did you mean "capabilities"?' }),
      ],
    },
    {
      name: 'lifecycle.run.health',
      toml: edit(PROCESS, { 35: 'retries = 3' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.health.retries', 35, {
          hint: /^known keys: check, interval, timeout, failure_threshold$/,
        }),
      ],
    },
    {
      name: 'dependencies[0]',
      toml: edit(PROCESS, { 40: 'optional = true' }),
      expected: [d(CODES.UNKNOWN_KEY, 'dependencies[0].optional', 40, { hint: 'known keys: name, version, type' })],
    },
    {
      name: 'lifecycle.run.container',
      toml: edit(CONTAINER, { 19: 'imagee = "nginx"' }),
      expected: [d(CODES.UNKNOWN_KEY, 'lifecycle.run.container.imagee', 19, { hint: 'did you mean "image"?' })],
    },
    {
      name: 'lifecycle.run.container.ports[1]',
      toml: edit(CONTAINER, { 27: 'protocol = "udp"' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.container.ports[1].protocol', 27, {
          hint: 'known keys: host_port, container_port',
        }),
      ],
    },
    {
      name: 'lifecycle.run.container.ports[0] typo',
      toml: edit(CONTAINER, { 23: 'host_prot = 1' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.container.ports[0].host_prot', 23, { hint: 'did you mean "host_port"?' }),
      ],
    },
    {
      name: 'lifecycle.run.container.mounts[0]',
      toml: edit(CONTAINER, { 32: 'readonly = true' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.container.mounts[0].readonly', 32, { hint: 'did you mean "read_only"?' }),
      ],
    },
    {
      name: 'lifecycle.run.container.resources',
      toml: edit(CONTAINER, { 36: 'cpus = 2' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.container.resources.cpus', 36, {
          hint: 'known keys: memory_mb, pids_limit',
        }),
      ],
    },
    {
      name: 'a dotted key inside a table',
      toml: edit(PROCESS, { 24: 'security.user = "x"' }),
      expected: [d(CODES.UNKNOWN_KEY, 'lifecycle.run.exec.security', 24, { hint: 'known keys: command, args, env' })],
    },
    {
      name: 'two unknown keys in one table',
      toml: edit(PROCESS, { 19: 'restart_polcy = "never"' }, '[lifecycle.run.foo]', 'x = 1'),
      expected: [
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.restart_polcy', 19),
        d(CODES.UNKNOWN_KEY, 'lifecycle.run.foo', 41),
      ],
    },
  ]);
});

describe('wrong types', () => {
  runRows([
    {
      name: 'a string where an integer goes',
      toml: edit(PROCESS, { 34: 'failure_threshold = "3"' }),
      expected: [
        d(CODES.INVALID_TYPE, 'lifecycle.run.health.failure_threshold', 34, {
          message: /^expected a number, got string "3"$/,
        }),
      ],
    },
    {
      name: 'a float where an integer goes',
      toml: edit(PROCESS, { 34: 'failure_threshold = 1.5' }),
      expected: [
        d(CODES.INVALID_TYPE, 'lifecycle.run.health.failure_threshold', 34, {
          message: /^expected an integer, got float 1.5$/,
        }),
      ],
    },
    {
      name: 'a string port',
      toml: edit(CONTAINER, { 21: 'host_port = "8080"' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.container.ports[0].host_port', 21)],
    },
    {
      name: 'an integer where a string goes, in env',
      toml: edit(PROCESS, { 23: 'env = { MODE = 1 }' }),
      expected: [
        d(CODES.INVALID_TYPE, 'lifecycle.run.exec.env.MODE', 23, { message: /^expected a string, got integer 1$/ }),
      ],
    },
    {
      name: 'an env key that needs quoting is rendered quoted',
      toml: edit(PROCESS, { 23: 'env = { "MY.KEY" = true }' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.exec.env."MY.KEY"', 23, { message: /got boolean true/ })],
    },
    {
      name: 'an integer in container env',
      toml: edit(CONTAINER, { 18: 'env = { TZ = "UTC", WORKERS = 4 }' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.container.env.WORKERS', 18)],
    },
    {
      name: 'an array where a table goes (env)',
      toml: edit(PROCESS, { 23: 'env = ["MODE=prod"]' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.exec.env', 23, { message: /^expected a table, got an array$/ })],
    },
    {
      name: 'an array of tables where a table goes (health)',
      toml: edit(PROCESS, { 30: '[[lifecycle.run.health]]' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.health', 30, { message: /expected a table, got an array/ })],
    },
    {
      name: 'a table where a string goes',
      toml: edit(PROCESS, { 21: 'command = { path = "./api" }' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.exec.command', 21, { message: /got a table/ })],
    },
    {
      name: 'a string where an array goes',
      toml: edit(PROCESS, { 22: 'args = "--port 8080"' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.exec.args', 22, { message: /^expected an array, got string/ })],
    },
    {
      name: 'a wrong element inside an array',
      toml: edit(PROCESS, { 22: 'args = ["--port", 8080]' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.exec.args[1]', 22)],
    },
    {
      name: 'a boolean given as a string (security)',
      toml: edit(PROCESS, { 27: 'no_new_privileges = "true"' }),
      expected: [
        d(CODES.INVALID_TYPE, 'lifecycle.run.security.no_new_privileges', 27, {
          message: /^expected a boolean, got string "true"$/,
        }),
      ],
    },
    {
      name: 'a boolean given as a string (container)',
      toml: edit(CONTAINER, { 16: 'privileged = "false"' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.container.privileged', 16)],
    },
    {
      name: 'a boolean given as a string (artifact)',
      toml: edit(PROCESS, { 10: 'unpack = "yes"' }),
      expected: [d(CODES.INVALID_TYPE, 'artifacts[0].unpack', 10)],
    },
    {
      name: 'a boolean given as a string (mount)',
      toml: edit(CONTAINER, { 31: 'read_only = "true"' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.container.mounts[0].read_only', 31)],
    },
    {
      name: 'a date where a version goes',
      toml: edit(PROCESS, { 4: 'version = 1979-05-27' }),
      expected: [d(CODES.INVALID_TYPE, 'metadata.version', 4, { message: /got datetime/ })],
    },
    {
      name: 'an integer where a name goes',
      toml: edit(PROCESS, { 3: 'name = 42' }),
      expected: [d(CODES.INVALID_TYPE, 'metadata.name', 3, { message: /^expected a string, got integer 42$/ })],
    },
    {
      name: 'a table where an artifact list goes',
      toml: edit(PROCESS, { 7: '[artifacts]' }),
      expected: [d(CODES.INVALID_TYPE, 'artifacts', 7, { message: /expected an array, got a table/ })],
    },
    {
      name: 'a string container command',
      toml: edit(CONTAINER, { 17: 'command = "nginx -g daemon"' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.container.command', 17)],
    },
  ]);
});

describe('missing required keys', () => {
  runRows([
    {
      name: 'metadata.name (located at its table)',
      toml: edit(PROCESS, { 3: '' }),
      expected: [d(CODES.MISSING_FIELD, 'metadata.name', 2, { message: /^missing required key "name"$/ })],
    },
    {
      name: 'metadata.version',
      toml: edit(PROCESS, { 4: '' }),
      expected: [d(CODES.MISSING_FIELD, 'metadata.version', 2, { message: /"version"/ })],
    },
    {
      name: 'the whole metadata table (no line to name)',
      toml: edit(PROCESS, blank(2, 5)),
      expected: [d(CODES.MISSING_FIELD, 'metadata', undefined)],
    },
    {
      name: 'lifecycle.run.exec.command',
      toml: edit(PROCESS, { 21: '' }),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle.run.exec.command', 20)],
    },
    {
      name: 'lifecycle.run.container.image',
      toml: edit(CONTAINER, { 11: '' }),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle.run.container.image', 10)],
    },
    {
      name: 'lifecycle.run.health.check',
      toml: edit(PROCESS, { 31: '' }),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle.run.health.check', 30)],
    },
    {
      name: 'dependencies[0].name',
      toml: edit(PROCESS, { 37: '' }),
      expected: [d(CODES.MISSING_FIELD, 'dependencies[0].name', 36)],
    },
    {
      name: 'dependencies[1].name',
      toml: edit(PROCESS, {}, '[[dependencies]]', 'type = "ordering"'),
      expected: [d(CODES.MISSING_FIELD, 'dependencies[1].name', 41)],
    },
    {
      name: 'artifacts[0].uri',
      toml: edit(PROCESS, { 8: '' }),
      expected: [d(CODES.MISSING_FIELD, 'artifacts[0].uri', 7)],
    },
    {
      name: 'lifecycle.install.script',
      toml: edit(PROCESS, { 13: '' }),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle.install.script', 12)],
    },
    {
      name: 'lifecycle.run.container.mounts[0].target',
      toml: edit(CONTAINER, { 30: '' }),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle.run.container.mounts[0].target', 28)],
    },
    {
      name: 'the lifecycle table',
      toml: ['[metadata]', 'name = "com.acme.x"', 'version = "1.0.0"'].join('\n'),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle', undefined)],
    },
    {
      name: 'an empty document',
      toml: '',
      expected: [d(CODES.MISSING_FIELD, 'lifecycle', undefined), d(CODES.MISSING_FIELD, 'metadata', undefined)],
    },
    {
      name: 'an empty command',
      toml: edit(PROCESS, { 21: 'command = ""' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.exec.command', 21, { message: /^must not be empty$/ })],
    },
    {
      name: 'an empty image',
      toml: edit(CONTAINER, { 11: 'image = ""' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.container.image', 11, { message: /must not be empty/ })],
    },
  ]);
});

describe('durations', () => {
  const fields = [
    { path: 'lifecycle.run.health.interval', line: 32, key: 'interval' },
    { path: 'lifecycle.run.health.timeout', line: 33, key: 'timeout' },
    { path: 'lifecycle.install.timeout', line: 14, key: 'timeout' },
  ] as const;
  const bad = ['10x', '-1s', '5', '', '10S', ' 10s', '1h-30m', 's'];
  const good: Array<[string, number]> = [
    ['200ms', 200],
    ['2m0s', 120_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1_500],
    ['.5s', 500],
    ['1h0m0s', 3_600_000],
  ];
  const valueAt = (r: ReturnType<typeof parseRecipe>, path: string): unknown =>
    path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], r.recipe);

  describe('bad ones are refused', () => {
    runRows(
      fields.flatMap((f) =>
        bad.map((v) => ({
          name: `${f.path} = ${JSON.stringify(v)}`,
          toml: edit(PROCESS, { [f.line]: `${f.key} = ${JSON.stringify(v)}` }),
          expected: [
            d(CODES.BAD_DURATION, f.path, f.line, {
              message: new RegExp(`^${JSON.stringify(v).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a duration$`),
              hint: /Go style/,
            }),
          ],
        })),
      ),
    );
  });

  describe('good ones are parsed to milliseconds', () => {
    it.each(fields.flatMap((f) => good.map(([text, ms]) => [f.path, text, ms, f] as const)))(
      '%s = "%s" → %d ms',
      (_p, text, ms, f) => {
        const r = parseRecipe(FILE, edit(PROCESS, { [f.line]: `${f.key} = "${text}"` }));
        expect(r.diagnostics).toEqual([]);
        expect(valueAt(r, f.path)).toBe(ms);
      },
    );
  });

  it('omitted durations take their defaults: interval 10s, timeout 3s, install timeout 5m', () => {
    const r = parseRecipe(FILE, edit(PROCESS, { 14: '', 32: '', 33: '' }));
    expect(r.diagnostics).toEqual([]);
    expect(r.recipe?.lifecycle?.run?.health).toMatchObject({ interval: 10_000, timeout: 3_000 });
    expect(r.recipe?.lifecycle?.install?.timeout).toBe(300_000);
  });

  runRows([
    {
      name: 'a number where a duration string goes',
      toml: edit(PROCESS, { 32: 'interval = 10' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.health.interval', 32)],
    },
  ]);
});

describe('semantic versions and ranges', () => {
  describe('bad metadata.version', () => {
    runRows(
      ['1.4', 'v1.2.3', 'latest', '1.2.3.4', '01.2.3', '=1.2.3', ' 1.2.3', ''].map((v) => ({
        name: JSON.stringify(v),
        toml: edit(PROCESS, { 4: `version = ${JSON.stringify(v)}` }),
        expected: [d(CODES.BAD_SEMVER, 'metadata.version', 4, { message: /is not a semantic version/ })],
      })),
    );
  });

  it.each(['0.0.1', '1.0.0-rc.1', '10.20.30', '1.0.0-alpha.beta.1'])('metadata.version %s is accepted', (v) => {
    expect(parseRecipe(FILE, edit(PROCESS, { 4: `version = "${v}"` })).diagnostics).toEqual([]);
  });

  // Regression (was a bug): semver 2.0 allows build metadata ("2.7.5+build.1"), but semverText compares semver.clean(v) with v,
  // and clean() drops the build part, so a valid version is refused with KS_BAD_SEMVER.
  it('metadata.version with build metadata (2.7.5+build.1) is accepted', () => {
    expect(parseRecipe(FILE, edit(PROCESS, { 4: 'version = "2.7.5+build.1"' })).diagnostics).toEqual([]);
  });

  describe('bad dependency ranges', () => {
    runRows(
      ['latest', '>=abc', '', '   ', '>=2.7.0 <', '>=2.7.0,<3', '=>1.0', 'not-a-range'].map((v) => ({
        name: JSON.stringify(v),
        toml: edit(PROCESS, { 38: `version = ${JSON.stringify(v)}` }),
        expected: [d(CODES.BAD_SEMVER_RANGE, 'dependencies[0].version', 38, { message: /is not a semver range/ })],
      })),
    );
  });

  it.each(['>=2.7.0', '^1.4', '1.x', '~2.7', '>=1.0.0 <2.0.0', '2.7.x || 3', '*', '2.7.5'])(
    'dependency range %s is accepted',
    (v) => {
      expect(parseRecipe(FILE, edit(PROCESS, { 38: `version = "${v}"` })).diagnostics).toEqual([]);
    },
  );
});

describe('enum values', () => {
  runRows([
    {
      name: 'lifecycle.run.type',
      toml: edit(PROCESS, { 17: 'type = "vm"' }),
      expected: [
        d(CODES.INVALID_VALUE, 'lifecycle.run.type', 17, {
          message: /^string "vm" is not allowed$/,
          hint: 'one of "process", "container"',
        }),
      ],
    },
    {
      name: 'lifecycle.run.type is case-sensitive',
      toml: edit(PROCESS, { 17: 'type = "Process"' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.type', 17)],
    },
    {
      name: 'restart_policy',
      toml: edit(PROCESS, { 18: 'restart_policy = "sometimes"' }),
      expected: [
        d(CODES.INVALID_VALUE, 'lifecycle.run.restart_policy', 18, { hint: 'one of "always", "on-failure", "never"' }),
      ],
    },
    {
      name: 'restart_policy in Docker spelling',
      toml: edit(PROCESS, { 18: 'restart_policy = "unless-stopped"' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.restart_policy', 18)],
    },
    {
      name: 'dependency type',
      toml: edit(PROCESS, { 39: 'type = "soft"' }),
      expected: [d(CODES.INVALID_VALUE, 'dependencies[0].type', 39, { hint: 'one of "hard", "ordering"' })],
    },
    {
      name: 'container runtime',
      toml: edit(CONTAINER, { 12: 'runtime = "containerd"' }),
      expected: [
        d(CODES.INVALID_VALUE, 'lifecycle.run.container.runtime', 12, { hint: 'one of "auto", "docker", "podman"' }),
      ],
    },
    {
      name: 'container pull_policy',
      toml: edit(CONTAINER, { 13: 'pull_policy = "IfNotPresent"' }),
      expected: [
        d(CODES.INVALID_VALUE, 'lifecycle.run.container.pull_policy', 13, {
          hint: 'one of "always", "if-not-present", "never"',
        }),
      ],
    },
  ]);

  it.each([
    ['lifecycle.run.restart_policy', PROCESS, 18, 'restart_policy', ['always', 'on-failure', 'never']],
    ['dependencies[0].type', PROCESS, 39, 'type', ['hard', 'ordering']],
    ['lifecycle.run.container.runtime', CONTAINER, 12, 'runtime', ['auto', 'docker', 'podman']],
    ['lifecycle.run.container.pull_policy', CONTAINER, 13, 'pull_policy', ['always', 'if-not-present', 'never']],
  ] as const)('every allowed value of %s is accepted', (_path, base, line, key, values) => {
    for (const v of values)
      expect(parseRecipe(FILE, edit(base, { [line]: `${key} = "${v}"` })).diagnostics).toEqual([]);
  });
});

describe('reverse-DNS names', () => {
  const bad = [
    'influxdb',
    'com..acme',
    '.com.acme',
    'com.acme.',
    '-com.acme',
    'com-.acme',
    'com.acme influxdb',
    'com/acme/db',
    '',
    `com.${'a'.repeat(250)}`,
  ];
  describe('metadata.name', () => {
    runRows(
      bad.map((v) => ({
        name: JSON.stringify(v.length > 40 ? v.slice(0, 12) + '…' : v),
        toml: edit(PROCESS, { 3: `name = "${v}"` }),
        expected: [
          d(CODES.BAD_NAME, 'metadata.name', 3, { message: /is not a reverse-DNS name/, hint: /com\.acme\.influxdb/ }),
        ],
      })),
    );
  });
  describe('dependencies[0].name', () => {
    runRows(
      bad.map((v) => ({
        name: JSON.stringify(v.length > 40 ? v.slice(0, 12) + '…' : v),
        toml: edit(PROCESS, { 37: `name = "${v}"` }),
        expected: [d(CODES.BAD_NAME, 'dependencies[0].name', 37)],
      })),
    );
  });
  it.each(['com.acme.influxdb', 'io.k8s.kube-proxy', 'com.acme.db_2', 'a.b', `com.${'a'.repeat(249)}`])(
    '%s is accepted',
    (v) => {
      expect(parseRecipe(FILE, edit(PROCESS, { 3: `name = "${v}"`, 37: `name = "${v}"` })).diagnostics).toEqual([]);
    },
  );
});

describe('health checks', () => {
  runRows(
    [
      ['ftp://x', /unsupported scheme ftp:/],
      ['tcp://host', /tcp:\/\/ needs host:port/],
      ['tcp://host:65536', /not a URL/],
      ['cmd:', /the command is empty/],
      ['cmd:   ', /the command is empty/],
      ['not a url', /not a URL/],
      ['http://', /not a URL/],
      ['localhost:8080', /unsupported scheme localhost:/],
      ['', /not a URL/],
    ].map(([check, why]) => ({
      name: JSON.stringify(check),
      toml: edit(PROCESS, { 31: `check = ${JSON.stringify(check)}` }),
      expected: [
        d(CODES.BAD_HEALTH_CHECK, 'lifecycle.run.health.check', 31, {
          message: why as RegExp,
          hint: 'http(s)://…, tcp://host:port or cmd:<command line>',
        }),
      ],
    })),
  );

  it.each([
    'http://127.0.0.1:8080/health',
    'https://example.com/',
    'tcp://127.0.0.1:5432',
    'tcp://[::1]:80',
    'cmd:./check --quick',
    'cmd:true',
  ])('%s is accepted', (check) => {
    expect(parseRecipe(FILE, edit(PROCESS, { 31: `check = "${check}"` })).diagnostics).toEqual([]);
  });

  // Regression (was a bug): tcp://host:0 passes (URL keeps port "0", a truthy string), but port 0 can never be connected to;
  // container ports already refuse 0 (portNumber is 1..65535), the tcp health check should too.
  it('tcp://127.0.0.1:0 is refused', () => {
    expectDiagnostics(parseRecipe(FILE, edit(PROCESS, { 31: 'check = "tcp://127.0.0.1:0"' })).diagnostics, [
      d(CODES.BAD_HEALTH_CHECK, 'lifecycle.run.health.check', 31),
    ]);
  });
});

describe('capabilities', () => {
  runRows([
    ...['NET_BIND_SERVICE', 'cap_net_bind_service', 'CAP_NET_BIND_SERVIC', 'CAP_ALL', ''].map((cap) => ({
      name: JSON.stringify(cap),
      toml: edit(PROCESS, { 28: `capabilities = ["${cap}"]` }),
      expected: [
        d(CODES.BAD_CAPABILITY, 'lifecycle.run.security.capabilities[0]', 28, {
          message: /is not a Linux capability/,
          hint: /CAP_NET_BIND_SERVICE/,
        }),
      ],
    })),
    {
      name: 'the second of two, on its own line',
      toml: edit(PROCESS, { 28: 'capabilities = ["CAP_CHOWN",', 29: '  "CAP_BOGUS"]' }),
      expected: [d(CODES.BAD_CAPABILITY, 'lifecycle.run.security.capabilities[1]', 29, { message: /"CAP_BOGUS"/ })],
    },
    {
      name: 'a string instead of a list',
      toml: edit(PROCESS, { 28: 'capabilities = "CAP_CHOWN"' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.security.capabilities', 28)],
    },
  ]);
  it('an empty list and real capabilities are accepted', () => {
    expect(parseRecipe(FILE, edit(PROCESS, { 28: 'capabilities = []' })).diagnostics).toEqual([]);
    expect(
      parseRecipe(FILE, edit(PROCESS, { 28: 'capabilities = ["CAP_CHOWN", "CAP_SYS_TIME", "CAP_NET_RAW"]' }))
        .diagnostics,
    ).toEqual([]);
  });
  runRows([
    {
      name: 'a malformed security.user',
      toml: edit(PROCESS, { 26: 'user = "api:"' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.security.user', 26, { message: /user:group/ })],
    },
  ]);
});

describe('ports and limits', () => {
  runRows([
    {
      name: 'host_port 0',
      toml: edit(CONTAINER, { 21: 'host_port = 0' }),
      expected: [
        d(CODES.INVALID_VALUE, 'lifecycle.run.container.ports[0].host_port', 21, {
          message: /^must be at least 1, got integer 0$/,
        }),
      ],
    },
    {
      name: 'host_port 65536',
      toml: edit(CONTAINER, { 21: 'host_port = 65536' }),
      expected: [
        d(CODES.INVALID_VALUE, 'lifecycle.run.container.ports[0].host_port', 21, {
          message: /^must be at most 65535, got integer 65536$/,
        }),
      ],
    },
    {
      name: 'host_port -1',
      toml: edit(CONTAINER, { 21: 'host_port = -1' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.container.ports[0].host_port', 21)],
    },
    {
      name: 'container_port of the second mapping 70000',
      toml: edit(CONTAINER, { 26: 'container_port = 70000' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.container.ports[1].container_port', 26)],
    },
    {
      name: 'a fractional port',
      toml: edit(CONTAINER, { 22: 'container_port = 80.5' }),
      expected: [d(CODES.INVALID_TYPE, 'lifecycle.run.container.ports[0].container_port', 22)],
    },
    {
      name: 'memory_mb 0',
      toml: edit(CONTAINER, { 34: 'memory_mb = 0' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.container.resources.memory_mb', 34)],
    },
    {
      name: 'failure_threshold 0',
      toml: edit(PROCESS, { 34: 'failure_threshold = 0' }),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.run.health.failure_threshold', 34)],
    },
  ]);
  it('ports 1 and 65535 are accepted', () => {
    expect(
      parseRecipe(FILE, edit(CONTAINER, { 21: 'host_port = 1', 22: 'container_port = 65535' })).diagnostics,
    ).toEqual([]);
  });
});

describe('artifacts', () => {
  runRows([
    {
      name: 'without sha256: unsigned',
      toml: edit(PROCESS, { 9: '' }),
      expected: [d(CODES.ARTIFACT_UNSIGNED, 'artifacts[0].sha256', 7, { message: /unsigned/, hint: /add sha256/ })],
    },
    {
      name: 'the second artifact without sha256',
      toml: edit(PROCESS, {}, '[[artifacts]]', 'uri = "https://example.com/extra.tar.gz"'),
      expected: [d(CODES.ARTIFACT_UNSIGNED, 'artifacts[1].sha256', 41)],
    },
    ...['abc', SHA.slice(1), SHA + '0', `sha256:${SHA}`, 'g'.repeat(64), ''].map((sha) => ({
      name: `malformed sha256 ${JSON.stringify(sha.length > 20 ? sha.slice(0, 10) + '…' : sha)}`,
      toml: edit(PROCESS, { 9: `sha256 = "${sha}"` }),
      expected: [d(CODES.ARTIFACT_UNSIGNED, 'artifacts[0].sha256', 9, { message: /is not a sha256 digest/ })],
    })),
    {
      name: 'a sha256 that is not a string',
      toml: edit(PROCESS, { 9: 'sha256 = 1234' }),
      expected: [d(CODES.INVALID_TYPE, 'artifacts[0].sha256', 9)],
    },
    ...['ftp://host/x.tar.gz', 's3://bucket/x.tar.gz', 'git+ssh://host/x', 'data:text/plain,x'].map((uri) => ({
      name: `unsupported scheme ${uri}`,
      toml: edit(PROCESS, { 8: `uri = "${uri}"` }),
      expected: [d(CODES.ARTIFACT_BAD_URI, 'artifacts[0].uri', 8, { message: /unsupported artifact scheme/ })],
    })),
    ...['../../x.tar.gz', '/etc/passwd', '../artifacts/../../x', 'a/../../../x', '..\\\\x.tar.gz'].map((uri) => ({
      name: `a relative path escaping the repository: ${uri}`,
      toml: edit(PROCESS, { 8: `uri = "${uri}"` }),
      expected: [d(CODES.PATH_ESCAPE, 'artifacts[0].uri', 8, { message: /points outside the repository/ })],
    })),
    {
      name: 'an empty uri',
      toml: edit(PROCESS, { 8: 'uri = ""' }),
      expected: [d(CODES.INVALID_VALUE, 'artifacts[0].uri', 8, { message: /must not be empty/ })],
    },
  ]);

  it.each([
    'https://example.com/x.tar.gz',
    'http://example.com/x.zip',
    'file:///opt/x.tgz',
    '../artifacts/fake-api.mjs',
    'x.tar.gz',
    'sub/dir/x.tar',
    'HTTPS://example.com/x',
  ])('uri %s is accepted', (uri) => {
    expect(parseRecipe(FILE, edit(PROCESS, { 8: `uri = "${uri}"` })).diagnostics).toEqual([]);
  });

  it('a path relative to a recipe at the repository root may not climb at all', () => {
    const r = parseRecipe('root.toml', edit(PROCESS, { 8: 'uri = "../x.tar.gz"' }));
    expect(r.diagnostics.map((x) => [x.code, x.path, x.line])).toEqual([[CODES.PATH_ESCAPE, 'artifacts[0].uri', 8]]);
  });
});

describe('process and container fields', () => {
  runRows([
    {
      name: '[lifecycle.run.container] on a process',
      toml: edit(PROCESS, {}, '[lifecycle.run.container]', 'image = "nginx"'),
      expected: [d(CODES.CONTAINER_FIELD_ON_PROCESS, 'lifecycle.run.container', 41, { hint: /type = "container"/ })],
    },
    {
      name: '[lifecycle.run.container] on a process by default (no type)',
      toml: edit(PROCESS, { 17: '' }, '[lifecycle.run.container]', 'image = "nginx"'),
      expected: [d(CODES.CONTAINER_FIELD_ON_PROCESS, 'lifecycle.run.container', 41)],
    },
    {
      name: 'a process without exec',
      toml: edit(PROCESS, blank(20, 23)),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle.run.exec', 16, { message: /needs \[lifecycle\.run\.exec\]/ })],
    },
    {
      name: '[lifecycle.run.security] on a container',
      toml: edit(CONTAINER, {}, '[lifecycle.run.security]', 'user = "nobody"'),
      expected: [d(CODES.PROCESS_FIELD_ON_CONTAINER, 'lifecycle.run.security', 45, { hint: /confine containers/ })],
    },
    {
      name: '[lifecycle.run.exec] on a container',
      toml: edit(CONTAINER, {}, '[lifecycle.run.exec]', 'command = "./web"'),
      expected: [d(CODES.PROCESS_FIELD_ON_CONTAINER, 'lifecycle.run.exec', 45, { hint: /command/ })],
    },
    {
      name: 'a container without [lifecycle.run.container]',
      toml: edit(CONTAINER, blank(10, 36)),
      expected: [
        d(CODES.MISSING_FIELD, 'lifecycle.run.container', 6, { message: /needs \[lifecycle\.run\.container\]/ }),
      ],
    },
    {
      name: 'a process recipe switched to type = "container": both process tables and the missing container',
      toml: edit(PROCESS, { 17: 'type = "container"' }),
      expected: [
        d(CODES.MISSING_FIELD, 'lifecycle.run.container', 16),
        d(CODES.PROCESS_FIELD_ON_CONTAINER, 'lifecycle.run.exec', 20),
        d(CODES.PROCESS_FIELD_ON_CONTAINER, 'lifecycle.run.security', 25),
      ],
    },
  ]);
});

describe('TOML syntax errors', () => {
  runRows([
    {
      name: 'an unterminated string',
      toml: edit(PROCESS, { 26: 'user = "api:api' }),
      expected: [d(CODES.TOML_SYNTAX, '', 26, { message: /^invalid TOML: / })],
    },
    {
      name: 'a key defined twice',
      toml: edit(PROCESS, { 6: 'name = "com.acme.other"' }),
      expected: [d(CODES.TOML_SYNTAX, '', 6)],
    },
    { name: 'a table defined twice', toml: edit(PROCESS, {}, '[metadata]'), expected: [d(CODES.TOML_SYNTAX, '', 41)] },
    {
      name: 'a key without a value',
      toml: edit(PROCESS, { 32: 'interval' }),
      expected: [d(CODES.TOML_SYNTAX, '', 32)],
    },
    {
      name: 'two values on one line',
      toml: edit(PROCESS, { 34: 'failure_threshold = 1 2' }),
      expected: [d(CODES.TOML_SYNTAX, '', 34)],
    },
  ]);

  it.each([
    ['an unterminated string', edit(PROCESS, { 26: 'user = "api:api' }), 26, 16],
    ['a key defined twice', edit(PROCESS, { 6: 'name = "com.acme.other"' }), 6, 1],
    ['two values on one line', edit(PROCESS, { 34: 'failure_threshold = 1 2' }), 34, 23],
  ] as const)('%s names line and column', (_name, toml, line, column) => {
    const [diag] = parseRecipe(FILE, toml).diagnostics;
    expect(diag).toMatchObject({ code: CODES.TOML_SYNTAX, file: FILE, path: '', line, column });
  });

  it('reports only the syntax error: the schema is not run on a broken document', () => {
    const r = parseRecipe(FILE, edit(PROCESS, { 3: 'name = "x"', 26: 'user = "api:api' }));
    expect(r.diagnostics.map((x) => x.code)).toEqual([CODES.TOML_SYNTAX]);
    expect(r.doc?.raw).toBeUndefined();
  });
});

describe('several errors in one file', () => {
  // Errors spread over the file in an order unlike the schema's: dependencies first, an unknown key after a bad value.
  const toml = [
    '[[dependencies]]', // 1
    'name = "influxdb"', // 2 BAD_NAME
    '', // 3
    '[metadata]', // 4
    'name = "com.acme.api"', // 5
    'version = "1.4"', // 6 BAD_SEMVER
    '', // 7
    '[lifecycle.run]', // 8
    'restart_polcy = "always"', // 9 UNKNOWN_KEY
    '[lifecycle.run.exec]', // 10
    'command = "./api"', // 11
    '[lifecycle.run.health]', // 12
    'check = "ftp://x"', // 13 BAD_HEALTH_CHECK
    'interval = "10x"', // 14 BAD_DURATION
    'chek = "cmd:true"', // 15 UNKNOWN_KEY
    '[lifecycle.run.container]', // 16 CONTAINER_FIELD_ON_PROCESS
    'image = "nginx"', // 17
    '[[artifacts]]', // 18
    'uri = "s3://bucket/x"', // 19 ARTIFACT_BAD_URI
    '', // 20 (no sha256: ARTIFACT_UNSIGNED at 18)
  ].join('\n');
  const expected = [
    d(CODES.BAD_NAME, 'dependencies[0].name', 2),
    d(CODES.BAD_SEMVER, 'metadata.version', 6),
    d(CODES.UNKNOWN_KEY, 'lifecycle.run.restart_polcy', 9),
    d(CODES.BAD_HEALTH_CHECK, 'lifecycle.run.health.check', 13),
    d(CODES.BAD_DURATION, 'lifecycle.run.health.interval', 14),
    d(CODES.UNKNOWN_KEY, 'lifecycle.run.health.chek', 15),
    d(CODES.CONTAINER_FIELD_ON_PROCESS, 'lifecycle.run.container', 16),
    d(CODES.ARTIFACT_UNSIGNED, 'artifacts[0].sha256', 18),
    d(CODES.ARTIFACT_BAD_URI, 'artifacts[0].uri', 19),
  ];

  it('are all reported at once', () => {
    const r = parseRecipe(FILE, toml);
    expectDiagnostics(r.diagnostics, expected);
    expect(r.recipe).toBeUndefined();
  });

  // Regression (was a bug): parseRecipe returns zod's issues in schema order (metadata, artifacts, lifecycle, dependencies; unknown
  // keys after a table's other issues) followed by the cross-field rules, not sorted by line. Only
  // resolveDesiredState sorts, so any caller printing ParsedRecipe.diagnostics shows them out of order.
  // parseRecipe should return sortDiagnostics(diagnostics).
  it('are returned sorted by line', () => {
    const r = parseRecipe(FILE, toml);
    expect(r.diagnostics.map((x) => [x.line, x.path])).toEqual(expected.map((e) => [e.line, e.path]));
  });
});

describe('update locks ([lifecycle.update], SPEC §19)', () => {
  it("a container's lock in a directory of its own parses", () => {
    expect(
      parseRecipe(FILE, edit(CONTAINER, {}, '[lifecycle.update]', 'lock = "tmp/balena/updates.lock"')).diagnostics,
    ).toEqual([]);
  });

  it('a lock in the work directory and a lock_timeout parse (the timeout in ms); absent, nothing is added', () => {
    const r = parseRecipe(
      FILE,
      edit(PROCESS, {}, '[lifecycle.update]', 'lock = "run/update.lock"', 'lock_timeout = "6h"'),
    );
    expect(r.diagnostics).toEqual([]);
    expect(r.recipe?.lifecycle?.update).toEqual({ lock: 'run/update.lock', lock_timeout: 21_600_000 });
    expect(
      parseRecipe(FILE, edit(PROCESS, {}, '[lifecycle.update]', 'lock = "update.lock"')).recipe?.lifecycle?.update,
    ).toEqual({ lock: 'update.lock' });
    expect(parseRecipe(FILE, edit(PROCESS, {})).recipe?.lifecycle).not.toHaveProperty('update');
  });

  runRows([
    ...['/run/update.lock', '../update.lock', 'run/../../x', 'run//update.lock', './update.lock', 'run/'].map(
      (lock) => ({
        name: `lock = ${JSON.stringify(lock)}: not a path inside the work directory`,
        toml: edit(PROCESS, {}, '[lifecycle.update]', `lock = ${JSON.stringify(lock)}`),
        expected: [
          d(CODES.INVALID_VALUE, 'lifecycle.update.lock', 42, {
            message: /a path inside the component's work directory/,
          }),
        ],
      }),
    ),
    {
      name: 'lock_timeout that is not a duration',
      toml: edit(PROCESS, {}, '[lifecycle.update]', 'lock = "run/update.lock"', 'lock_timeout = "soon"'),
      expected: [d(CODES.BAD_DURATION, 'lifecycle.update.lock_timeout', 43)],
    },
    {
      name: 'a typo in [lifecycle.update]',
      toml: edit(PROCESS, {}, '[lifecycle.update]', 'lock = "run/update.lock"', 'lock_timout = "1h"'),
      expected: [d(CODES.UNKNOWN_KEY, 'lifecycle.update.lock_timout', 43, { hint: 'did you mean "lock_timeout"?' })],
    },
    ...['update.lock', 'run/update.lock', 'tmp/update.lock', 'etc/keystone/update.lock', 'usr/lock/x'].map((lock) => ({
      name: `a container's lock = ${JSON.stringify(lock)}: no directory of its own to mount`,
      toml: edit(CONTAINER, {}, '[lifecycle.update]', `lock = ${JSON.stringify(lock)}`),
      expected: [d(CODES.INVALID_VALUE, 'lifecycle.update.lock', 46, { message: /has no directory|would mount over/ })],
    })),
    {
      name: '[lifecycle.update] without a lock',
      toml: edit(PROCESS, {}, '[lifecycle.update]', 'lock_timeout = "1h"'),
      expected: [d(CODES.MISSING_FIELD, 'lifecycle.update.lock', 41)],
    },
  ]);
});
