// Validation of composite services, configuration, exports and binds (SPEC §2, §12), table-driven: a valid revision
// that uses every feature, one edit per row, and the exact diagnostics (code, file, rendered TOML path, line) it must
// produce, with messages and hints that name both sides. Files go through loadRevision, as the agent reads them.
import { describe, expect, it } from 'vitest';
import { CODES, type Diagnostic, type ErrorCode } from '../../src/core/errors.js';
import type { Resolution } from '../../src/core/desired-state.js';
import { parseRecipe } from '../../src/core/recipe.js';
import { loadRevision } from '../../src/load/load-revision.js';
import { MemoryReader } from '../../src/source/memory-reader.js';

type Files = Readonly<Record<string, string>>;

const PLAN = 'plans/p.toml';
const SHA = '8546f0766d6c37256ba39c3a7d5a5de00f187f8b2880ca8bf825d733154f054e';

/**
 * db: a plain recipe with [config] and [exports]. app: web + jobs services (shared artifacts, install, config and
 * exports; jobs after web; web binds db's port; a plan override). gw: a composite of api + proxy (the proxy binds the
 * api's exported port; one [config.X] per member; a plan override of a member's key). client: a container, ordering
 * on gw, binding two of its exports. w: three replicas. nested.toml is a composite no plan names (for one row).
 */
const BASE: Files = {
  [PLAN]: `[[components]]
name = "db"
recipe = "recipes/db.toml"

[[components]]
name = "app"
recipe = "recipes/app.toml"
config = { port = 8081 }

[[components]]
name = "gw"
recipe = "recipes/gw.toml"

[components.config.api]
port = 9100

[[components]]
name = "client"
recipe = "recipes/client.toml"

[[components]]
name = "w"
recipe = "recipes/w.toml"
`,
  'recipes/db.toml': `[metadata]
name = "com.acme.db"
version = "2.0.0"

[config]
port = 5432

[exports]
port = "{{config.port}}"
host = "127.0.0.1"

[lifecycle.run.exec]
command = "./db"
args = ["--port", "{{config.port}}"]

[lifecycle.run.health]
check = "tcp://127.0.0.1:{{config.port}}"
`,
  'recipes/app.toml': `[metadata]
name = "com.acme.app"
version = "1.0.0"

[[artifacts]]
uri = "https://artifacts.acme.com/app.tar.gz"
sha256 = "${SHA}"

[config]
port = 8080
workers = 2

[config.http]
host = "127.0.0.1"

[exports]
url = "http://{{config.http.host}}:{{config.port}}"

[lifecycle.install]
script = "npm ci"

[lifecycle.services.web]
restart_policy = "always"

[lifecycle.services.web.exec]
command = "node"
args = ["web.js", "--port", "{{config.port}}", "--db", "{{deps.db.exports.port}}"]

[lifecycle.services.web.health]
check = "http://{{config.http.host}}:{{config.port}}/health"

[lifecycle.services.jobs]
after = ["web"]

[lifecycle.services.jobs.exec]
command = "node"
args = ["jobs.js", "--concurrency", "{{config.workers}}", "--web", "{{deps.web.exports.url}}"]

[[dependencies]]
name = "com.acme.db"
type = "hard"
`,
  'recipes/gw.toml': `[metadata]
name = "com.acme.gw"
version = "1.0.0"

[[members]]
name = "api"
recipe = "recipes/api.toml"

[[members]]
name = "proxy"
recipe = "recipes/proxy.toml"

[config.api]
port = 9000

[config.proxy]
listen = 9001

[[dependencies]]
name = "com.acme.db"
type = "ordering"
`,
  'recipes/api.toml': `[metadata]
name = "com.acme.api"
version = "1.0.0"

[config]
port = 8000

[exports]
port = "{{config.port}}"

[lifecycle.run.exec]
command = "./api"
args = ["--port", "{{config.port}}"]

[lifecycle.run.health]
check = "http://127.0.0.1:{{config.port}}/health"
`,
  'recipes/proxy.toml': `[metadata]
name = "com.acme.proxy"
version = "1.0.0"

[config]
listen = 8001

[exports]
listen = "{{config.listen}}"

[lifecycle.run.exec]
command = "./proxy"
args = ["--listen", "{{config.listen}}", "--upstream", "http://127.0.0.1:{{deps.api.exports.port}}"]

[[dependencies]]
name = "com.acme.api"
type = "hard"
`,
  'recipes/client.toml': `[metadata]
name = "com.acme.client"
version = "1.0.0"

[lifecycle.run]
type = "container"

[lifecycle.run.container]
image = "docker.io/library/busybox:1.36"
command = ["wget", "http://127.0.0.1:{{deps.gw.exports.listen}}"]
env = { API_PORT = "{{deps.gw.exports.port}}" }

[[dependencies]]
name = "com.acme.gw"
type = "ordering"
`,
  'recipes/w.toml': `[metadata]
name = "com.acme.w"
version = "1.0.0"

[lifecycle.run]
replicas = 3

[lifecycle.run.exec]
command = "./worker"
`,
  'recipes/nested.toml': `[metadata]
name = "com.acme.nested"
version = "1.0.0"

[[members]]
name = "x"
recipe = "recipes/api.toml"
`,
};

const encoder = new TextEncoder();

async function load(files: Files): Promise<Resolution> {
  const bytes = new Map(Object.entries(files).map(([p, text]) => [p, encoder.encode(text)]));
  return loadRevision(new MemoryReader(bytes, 'test'), PLAN);
}

async function diagnosticsOf(files: Files): Promise<Diagnostic[]> {
  const r = await load(files);
  if (r.ok) throw new Error(`expected the revision to be refused, got ${JSON.stringify(r.state.startOrder)}`);
  return r.diagnostics;
}

/** `files` with the one occurrence of `from` in `file` replaced by `to` (throws when it is not there exactly once). */
function edit(files: Files, file: string, from: string, to: string): Files {
  const text = files[file];
  if (text === undefined) throw new Error(`no file ${file}`);
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`"${from}" is not in ${file} exactly once`);
  return { ...files, [file]: text.slice(0, at) + to + text.slice(at + from.length) };
}

const append = (files: Files, file: string, more: string): Files => ({ ...files, [file]: files[file]! + more });

/** Without the client, whose binds to gw would otherwise fail too when gw's own recipe is refused (see BUG A). */
const noClient = (files: Files): Files =>
  edit(files, PLAN, '[[components]]\nname = "client"\nrecipe = "recipes/client.toml"\n\n', '');

/** The 1-based line of the one line of `file` that contains `snippet`. */
function lineOf(files: Files, file: string, snippet: string): number {
  const lines = files[file]!.split('\n');
  const hits = lines.flatMap((l, i) => (l.includes(snippet) ? [i + 1] : []));
  if (hits.length !== 1) throw new Error(`"${snippet}" is on ${hits.length} lines of ${file}`);
  return hits[0]!;
}

const where = (diags: Diagnostic[]) => diags.map((d) => ({ code: d.code, file: d.file, path: d.path, line: d.line }));

interface Row {
  name: string;
  files: Files;
  code: ErrorCode;
  file: string;
  path: string;
  /** A text found on exactly one line of `file`: the line the diagnostic must name. */
  line: string;
  /** Texts the message must contain (both sides, where there are two). */
  message: string[];
  hint?: string[];
}

const collision = edit(
  BASE,
  'recipes/proxy.toml',
  'listen = "{{config.listen}}"\n',
  'listen = "{{config.listen}}"\nport = "{{config.listen}}"\n',
);
const twoServiceExports = edit(
  edit(
    BASE,
    'recipes/app.toml',
    '[lifecycle.services.jobs]\n',
    '[lifecycle.services.web.exports]\nqueue = "web-q"\n\n[lifecycle.services.jobs]\n',
  ),
  'recipes/app.toml',
  '[lifecycle.services.jobs.exec]',
  '[lifecycle.services.jobs.exports]\nqueue = "jobs-q"\n\n[lifecycle.services.jobs.exec]',
);
const runAndServices = edit(
  BASE,
  'recipes/app.toml',
  '[lifecycle.install]',
  '[lifecycle.run.exec]\ncommand = "./app"\n\n[lifecycle.install]',
);

const rows: Row[] = [
  {
    name: 'two members of a composite export the same key',
    files: collision,
    code: CODES.EXPORT_COLLISION,
    file: 'recipes/proxy.toml',
    path: 'exports.port',
    line: 'port = "{{config.listen}}"',
    message: ['gw/proxy', 'gw/api', 'both export "port"'],
    hint: [`recipes/api.toml:${lineOf(BASE, 'recipes/api.toml', 'port = "{{config.port}}"')} exports.port`],
  },
  {
    name: 'two services of one recipe export the same key',
    files: twoServiceExports,
    code: CODES.EXPORT_COLLISION,
    file: 'recipes/app.toml',
    path: 'lifecycle.services.jobs.exports.queue',
    line: 'queue = "jobs-q"',
    message: ['app/jobs', 'app/web', 'both export "queue"'],
    hint: [
      `recipes/app.toml:${lineOf(twoServiceExports, 'recipes/app.toml', 'queue = "web-q"')} lifecycle.services.web.exports.queue`,
    ],
  },
  {
    name: 'a member binds a key its sibling does not export',
    files: edit(BASE, 'recipes/proxy.toml', '{{deps.api.exports.port}}', '{{deps.api.exports.http_port}}'),
    code: CODES.BIND_UNKNOWN,
    file: 'recipes/proxy.toml',
    path: 'lifecycle.run.exec.args[3]',
    line: 'args = [',
    message: ['{{deps.api.exports.http_port}}', 'gw/api exports no "http_port"'],
    hint: ['gw/api exports: port'],
  },
  {
    name: 'a dependent binds a key no member of the composite exports',
    files: edit(BASE, 'recipes/client.toml', '{{deps.gw.exports.port}}', '{{deps.gw.exports.admin}}'),
    code: CODES.BIND_UNKNOWN,
    file: 'recipes/client.toml',
    path: 'lifecycle.run.container.env.API_PORT',
    line: 'env = {',
    message: ['gw exports no "admin"'],
    hint: ['gw exports:', 'port', 'listen'],
  },
  {
    name: 'a bind to a component that is no dependency (the recipe has none)',
    files: edit(BASE, 'recipes/db.toml', 'command = "./db"', 'command = "./db-{{deps.app.exports.url}}"'),
    code: CODES.BIND_UNKNOWN,
    file: 'recipes/db.toml',
    path: 'lifecycle.run.exec.command',
    line: 'command = ',
    message: ['{{deps.app.exports.url}}', 'app is not a dependency of this component'],
    hint: ['[[dependencies]]'],
  },
  {
    name: 'a bind to a component that is no dependency (the hint lists the real ones)',
    files: edit(BASE, 'recipes/proxy.toml', 'command = "./proxy"', 'command = "./proxy-{{deps.app.exports.url}}"'),
    code: CODES.BIND_UNKNOWN,
    file: 'recipes/proxy.toml',
    path: 'lifecycle.run.exec.command',
    line: 'command = ',
    message: ['app is not a dependency of this component'],
    hint: ['its dependencies: ', 'api', 'db'],
  },
  {
    name: 'an interpolation of an unknown config key',
    files: edit(
      BASE,
      'recipes/api.toml',
      'args = ["--port", "{{config.port}}"]',
      'args = ["--port", "{{config.prot}}"]',
    ),
    code: CODES.CONFIG_UNKNOWN,
    file: 'recipes/api.toml',
    path: 'lifecycle.run.exec.args[1]',
    line: 'args = [',
    message: ['{{config.prot}}', 'no such key'],
    hint: ['keys: port'],
  },
  {
    name: 'an interpolation of an unknown nested config key, in a service',
    files: edit(
      BASE,
      'recipes/app.toml',
      'check = "http://{{config.http.host}}',
      'check = "http://{{config.http.hots}}',
    ),
    code: CODES.CONFIG_UNKNOWN,
    file: 'recipes/app.toml',
    path: 'lifecycle.services.web.health.check',
    line: 'check = ',
    message: ['{{config.http.hots}}'],
    hint: ['port', 'workers', 'http.host'],
  },
  {
    name: 'an export interpolates an unknown config key',
    files: edit(BASE, 'recipes/api.toml', 'port = "{{config.port}}"', 'port = "{{config.api_port}}"'),
    code: CODES.CONFIG_UNKNOWN,
    file: 'recipes/api.toml',
    path: 'exports.port',
    line: 'port = "{{config.api_port}}"',
    message: ['{{config.api_port}}'],
    hint: ['keys: port'],
  },
  {
    name: 'an interpolation of a config table rather than a value',
    files: edit(BASE, 'recipes/app.toml', '"jobs.js"', '"{{config.http}}"'),
    code: CODES.CONFIG_NOT_SCALAR,
    file: 'recipes/app.toml',
    path: 'lifecycle.services.jobs.exec.args[0]',
    line: '"{{config.http}}"',
    message: ['{{config.http}}', 'is a table'],
    hint: ['http.host'],
  },
  {
    name: 'a plan override of a key the recipe does not have',
    files: edit(BASE, PLAN, 'config = { port = 8081 }', 'config = { prot = 8081 }'),
    code: CODES.CONFIG_OVERRIDE_UNKNOWN,
    file: PLAN,
    path: 'components[1].config.prot',
    line: 'config = { prot = 8081 }',
    message: ['"prot"', 'recipes/app.toml'],
    hint: ['port', 'workers', 'http'],
  },
  {
    name: "a plan override of a key a composite member's recipe does not have",
    files: edit(BASE, PLAN, 'port = 9100', 'prot = 9100'),
    code: CODES.CONFIG_OVERRIDE_UNKNOWN,
    file: PLAN,
    path: 'components[2].config.api.prot',
    line: 'prot = 9100',
    message: ['"prot"', 'recipes/api.toml'],
    hint: ['port'],
  },
  {
    name: 'a plan override of a value with a table',
    files: edit(BASE, PLAN, 'config = { port = 8081 }', 'config = { http = 1 }'),
    code: CODES.INVALID_TYPE,
    file: PLAN,
    path: 'components[1].config.http',
    line: 'config = { http = 1 }',
    message: ['"http"', 'a table', 'recipes/app.toml'],
  },
  {
    name: 'a plan override section naming no member of the composite',
    files: edit(BASE, PLAN, '[components.config.api]', '[components.config.apx]'),
    code: CODES.MEMBER_UNKNOWN,
    file: PLAN,
    path: 'components[2].config.apx',
    line: '[components.config.apx]',
    message: ['apx', 'gw'],
    hint: ['members: api, proxy'],
  },
  {
    name: "a composite's [config.X] sets a key the member's recipe does not have",
    files: edit(BASE, 'recipes/gw.toml', 'listen = 9001', 'listn = 9001'),
    code: CODES.CONFIG_OVERRIDE_UNKNOWN,
    file: 'recipes/gw.toml',
    path: 'config.proxy.listn',
    line: 'listn = 9001',
    message: ['"listn"', 'recipes/proxy.toml'],
    hint: ['listen'],
  },
  {
    name: "a composite's [config.X] names no member",
    files: noClient(edit(BASE, 'recipes/gw.toml', '[config.proxy]', '[config.proxi]')),
    code: CODES.MEMBER_UNKNOWN,
    file: 'recipes/gw.toml',
    path: 'config.proxi',
    line: '[config.proxi]',
    message: ['[config.proxi]', 'no member'],
    hint: ['members: api, proxy'],
  },
  {
    name: "a composite's [config.X] is a value, not a section",
    files: noClient(edit(BASE, 'recipes/gw.toml', '[config.proxy]\nlisten = 9001', '[config]\nproxy = 9001')),
    code: CODES.INVALID_TYPE,
    file: 'recipes/gw.toml',
    path: 'config.proxy',
    line: 'proxy = 9001',
    message: ['[config.proxy]', 'table'],
  },
  {
    name: 'a composite member that is itself a composite',
    files: edit(
      BASE,
      'recipes/gw.toml',
      '[config.api]',
      '[[members]]\nname = "inner"\nrecipe = "recipes/nested.toml"\n\n[config.api]',
    ),
    code: CODES.COMPOSITE_NESTED,
    file: 'recipes/gw.toml',
    path: 'members[2].recipe',
    line: 'recipe = "recipes/nested.toml"',
    message: ['inner', 'recipes/nested.toml', 'a composite'],
  },
  {
    name: 'a composite member that has services',
    files: edit(
      BASE,
      'recipes/gw.toml',
      '[config.api]',
      '[[members]]\nname = "inner"\nrecipe = "recipes/app.toml"\n\n[config.api]',
    ),
    code: CODES.COMPOSITE_NESTED,
    file: 'recipes/gw.toml',
    path: 'members[2].recipe',
    line: 'recipe = "recipes/app.toml"',
    message: ['inner', 'recipes/app.toml', 'several services'],
  },
  {
    name: 'a composite that lists itself',
    files: noClient(edit(BASE, 'recipes/gw.toml', 'recipe = "recipes/proxy.toml"', 'recipe = "recipes/gw.toml"')),
    code: CODES.COMPOSITE_NESTED,
    file: 'recipes/gw.toml',
    path: 'members[1].recipe',
    line: 'recipe = "recipes/gw.toml"',
    message: ['itself'],
  },
  {
    name: 'a recipe with both [lifecycle.run] and [lifecycle.services]',
    files: runAndServices,
    code: CODES.RECIPE_KIND,
    file: 'recipes/app.toml',
    path: 'lifecycle.services',
    line: '[lifecycle.services.web]',
    message: ['lifecycle.run', 'lifecycle.services'],
  },
  {
    name: 'a composite with a [lifecycle] of its own',
    files: noClient(
      edit(BASE, 'recipes/gw.toml', '[config.api]', '[lifecycle.install]\nscript = "true"\n\n[config.api]'),
    ),
    code: CODES.RECIPE_KIND,
    file: 'recipes/gw.toml',
    path: 'lifecycle',
    line: '[lifecycle.install]',
    message: ['composite', '[lifecycle]'],
  },
  {
    name: 'a service after an unknown sibling',
    files: edit(BASE, 'recipes/app.toml', 'after = ["web"]', 'after = ["wbe"]'),
    code: CODES.MEMBER_UNKNOWN,
    file: 'recipes/app.toml',
    path: 'lifecycle.services.jobs.after[0]',
    line: 'after = ["wbe"]',
    message: ['jobs', 'wbe'],
    hint: ['services: web, jobs'],
  },
  {
    name: 'a service requiring an unknown sibling, second in its list',
    files: edit(BASE, 'recipes/app.toml', 'after = ["web"]', 'requires = ["web", "mail"]'),
    code: CODES.MEMBER_UNKNOWN,
    file: 'recipes/app.toml',
    path: 'lifecycle.services.jobs.requires[1]',
    line: 'requires = ["web", "mail"]',
    message: ['jobs', 'mail'],
    hint: ['services: web, jobs'],
  },
  {
    name: 'a service requiring itself',
    files: edit(BASE, 'recipes/app.toml', 'after = ["web"]', 'requires = ["jobs"]'),
    code: CODES.MEMBER_UNKNOWN,
    file: 'recipes/app.toml',
    path: 'lifecycle.services.jobs.requires[0]',
    line: 'requires = ["jobs"]',
    message: ['jobs', 'itself'],
  },
  {
    name: 'a malformed placeholder {{config.}}',
    files: edit(BASE, 'recipes/w.toml', 'command = "./worker"', 'command = "./worker-{{config.}}"'),
    code: CODES.TEMPLATE_SYNTAX,
    file: 'recipes/w.toml',
    path: 'lifecycle.run.exec.command',
    line: 'command = ',
    message: ['{{config.}}'],
    hint: ['{{config.KEY}}', '{{deps.NAME.exports.KEY}}'],
  },
  {
    name: 'an unclosed {{',
    files: edit(BASE, 'recipes/w.toml', 'command = "./worker"', 'command = "./worker-{{config.port"'),
    code: CODES.TEMPLATE_SYNTAX,
    file: 'recipes/w.toml',
    path: 'lifecycle.run.exec.command',
    line: 'command = ',
    message: ['"{{" without "}}"', './worker-{{config.port'],
  },
  {
    name: 'an export that binds another component’s export',
    files: noClient(
      edit(BASE, 'recipes/proxy.toml', 'listen = "{{config.listen}}"', 'listen = "{{deps.api.exports.port}}"'),
    ),
    code: CODES.TEMPLATE_SYNTAX,
    file: 'recipes/proxy.toml',
    path: 'exports.listen',
    line: 'listen = "{{deps.api.exports.port}}"',
    message: ['{{deps.api.exports.port}}', 'export cannot bind'],
  },
  {
    name: 'a health check that is no URL once its placeholders are resolved',
    files: edit(BASE, PLAN, 'port = 9100', 'port = 99999'),
    code: CODES.BAD_HEALTH_CHECK,
    file: 'recipes/api.toml',
    path: 'lifecycle.run.health.check',
    line: 'check = ',
    message: ['http://127.0.0.1:99999/health'],
  },
  {
    name: 'a cycle between two services',
    files: edit(
      BASE,
      'recipes/app.toml',
      'restart_policy = "always"',
      'restart_policy = "always"\nrequires = ["jobs"]',
    ),
    code: CODES.DEP_CYCLE,
    file: 'recipes/app.toml',
    path: 'lifecycle.services.web.requires[0]',
    line: 'requires = ["jobs"]',
    message: ['app/web → app/jobs → app/web'],
  },
  {
    name: 'a cycle between two members of a composite',
    files: append(BASE, 'recipes/api.toml', '\n[[dependencies]]\nname = "com.acme.proxy"\ntype = "ordering"\n'),
    code: CODES.DEP_CYCLE,
    file: 'recipes/api.toml',
    path: 'dependencies[0]',
    line: '[[dependencies]]',
    message: ['gw/api → gw/proxy → gw/api'],
  },
];

describe('composite, configuration, export and bind validation', () => {
  it('a revision that uses every feature resolves with no diagnostic', async () => {
    const r = await load(BASE);
    if (!r.ok)
      throw new Error(r.diagnostics.map((d) => `${d.code} ${d.file}:${d.line} ${d.path} ${d.message}`).join('\n'));
    const s = r.state;
    expect(s.groups?.map((g) => [g.name, g.kind, g.members])).toEqual([
      ['app', 'services', ['app/web', 'app/jobs']],
      ['gw', 'composite', ['gw/api', 'gw/proxy']],
      ['w', 'replicas', ['w/1', 'w/2', 'w/3']],
    ]);
    const c = (n: string) => s.components.find((x) => x.name === n)!;
    // Plan override (8081), export of a plain recipe, composite section (9000) overridden by the plan (9100), binds.
    expect(c('app/web').inputs).toEqual({
      'config.port': '8081',
      'config.http.host': '127.0.0.1',
      'deps.db.exports.port': '5432',
    });
    expect(c('app/jobs').inputs).toEqual({ 'config.workers': '2', 'deps.web.exports.url': 'http://127.0.0.1:8081' });
    expect(c('gw/proxy').inputs).toEqual({ 'config.listen': '9001', 'deps.api.exports.port': '9100' });
    expect(c('client').inputs).toEqual({ 'deps.gw.exports.listen': '9001', 'deps.gw.exports.port': '9100' });
    expect(c('client').recipe.lifecycle.run.container?.env).toEqual({ API_PORT: '9100' });
    expect(c('gw/api').recipe.lifecycle.run.health?.check).toBe('http://127.0.0.1:9100/health');
  });

  it.each(rows.map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const diags = await diagnosticsOf(row.files);
    expect(where(diags)).toEqual([
      { code: row.code, file: row.file, path: row.path, line: lineOf(row.files, row.file, row.line) },
    ]);
    for (const part of row.message) expect(diags[0]!.message).toContain(part);
    for (const part of row.hint ?? []) expect(diags[0]!.hint ?? '').toContain(part);
  });

  it('every error of a revision is reported at once', async () => {
    let files = edit(BASE, 'recipes/proxy.toml', '{{deps.api.exports.port}}', '{{deps.api.exports.http_port}}');
    files = edit(files, PLAN, 'config = { port = 8081 }', 'config = { prot = 8081 }');
    files = edit(files, 'recipes/w.toml', 'command = "./worker"', 'command = "./worker-{{config.}}"');
    const codes = (await diagnosticsOf(files)).map((d) => `${d.code} ${d.file}`);
    expect(codes.sort()).toEqual(
      [
        `${CODES.BIND_UNKNOWN} recipes/proxy.toml`,
        `${CODES.CONFIG_OVERRIDE_UNKNOWN} ${PLAN}`,
        `${CODES.TEMPLATE_SYNTAX} recipes/w.toml`,
      ].sort(),
    );
  });

  // Regression (bug A, fixed): a bind to a dependency whose own recipe is refused adds a false "db is not a dependency of this component"
  // (desired-state.ts, step 3: `if (!providerRecipe) continue;` drops the edge, then resolveText finds no alias). The
  // plan-level check takes care never to report a false "missing" for a recipe that failed; binds do not.
  it('a bind to a dependency whose recipe has errors adds no false diagnostic', async () => {
    const files = edit(BASE, 'recipes/db.toml', 'command = "./db"', 'command = "./db"\nbogus = 1');
    expect(where(await diagnosticsOf(files))).toEqual([
      { code: CODES.UNKNOWN_KEY, file: 'recipes/db.toml', path: 'lifecycle.run.exec.bogus', line: 14 },
    ]);
  });

  // Regression (bug B, fixed): when one member's recipe is refused, its sibling's dependency on it falls through to the plan and is reported
  // as KS_DEP_MISSING "component gw/proxy depends on com.acme.api, which no component of plans/p.toml provides", plus a
  // false KS_BIND_UNKNOWN "api is not a dependency" (desired-state.ts unitsOfEntry: the sibling is looked up by
  // `memberRecipes[s]?.recipe?.metadata.name`, undefined for a recipe that failed, instead of its raw name).
  it("a member whose sibling's recipe has errors gets no false missing dependency", async () => {
    const files = noClient(edit(BASE, 'recipes/api.toml', 'command = "./api"', 'command = "./api"\nbogus = 1'));
    expect(where(await diagnosticsOf(files))).toEqual([
      { code: CODES.UNKNOWN_KEY, file: 'recipes/api.toml', path: 'lifecycle.run.exec.bogus', line: 13 },
    ]);
  });

  // Regression (bug C, fixed): a plan override of a composite member's section with a plain value (`[components.config] api = 9100`) is
  // silently ignored: desired-state.ts unitsOfEntry merges `table(overrides[m.name])`, which is undefined for a value, so
  // the revision resolves with the recipe's 9000. The same mistake in the composite recipe is KS_INVALID_TYPE.
  it("a plan override of a member's section with a value is refused, not ignored", async () => {
    const files = edit(BASE, PLAN, '[components.config.api]\nport = 9100', '[components.config]\napi = 9100');
    const diags = await diagnosticsOf(files);
    expect(where(diags)).toEqual([
      {
        code: CODES.INVALID_TYPE,
        file: PLAN,
        path: 'components[2].config.api',
        line: lineOf(files, PLAN, 'api = 9100'),
      },
    ]);
  });

  // Regression (bug D, fixed): an export in [lifecycle.services.NAME.exports] that binds {{deps…}} is not refused as KS_TEMPLATE_SYNTAX like one
  // in [exports] (recipe.ts shapeRules calls templateRules on the whole service without configOnly); resolution then
  // reports the false "db is not a dependency of this component" although db is one.
  it('a service export that binds another component’s export is refused as such', async () => {
    const files = edit(
      BASE,
      'recipes/app.toml',
      '[lifecycle.services.jobs]\n',
      '[lifecycle.services.web.exports]\ndb_port = "{{deps.db.exports.port}}"\n\n[lifecycle.services.jobs]\n',
    );
    const diags = await diagnosticsOf(files);
    expect(where(diags)).toEqual([
      {
        code: CODES.TEMPLATE_SYNTAX,
        file: 'recipes/app.toml',
        path: 'lifecycle.services.web.exports.db_port',
        line: lineOf(files, 'recipes/app.toml', 'db_port = '),
      },
    ]);
  });

  // Regression (bug E, fixed): literal braces in a string are now template syntax, with no escape: a JSON value in env (`{"log":{"level":"info"}}`
  // ends in "}}") or a docker --format '{{.ID}}' is KS_TEMPLATE_SYNTAX. Such recipes were valid before composites
  // (template.ts parseTemplate, applied to every string by recipe.ts templateRules), so an upgrade refuses revisions
  // that deployed yesterday. Placeholders should be only {{config.…}}/{{deps.…}}, or literal braces escapable.
  it('only {{config.…}} and {{deps.…}} are placeholders: other braces (Go templates, a bare {{config}}) stay literal', () => {
    for (const literal of [
      '{{config}}',
      '{{ deps }}',
      '{{config-file}}',
      '{{config "x"}}',
      '{{.ID}}',
      '{{configx.y}}',
    ]) {
      const text = BASE['recipes/w.toml']!.replace(
        'command = "./worker"',
        `command = "./worker"\nargs = [${JSON.stringify(literal)}]`,
      );
      expect(parseRecipe('recipes/w.toml', text).diagnostics, literal).toEqual([]);
    }
    const bad = BASE['recipes/w.toml']!.replace('command = "./worker"', 'command = "./worker"\nargs = ["{{config.}}"]');
    expect(parseRecipe('recipes/w.toml', bad).diagnostics.map((d) => d.code)).toEqual([CODES.TEMPLATE_SYNTAX]);
  });

  it('a bind to a name that is both a sibling member and a plan component is refused, naming both', async () => {
    // The proxy depends on com.acme.api, a sibling, and on com.acme.db, whose plan component is renamed "api".
    let files = edit(BASE, PLAN, 'name = "db"', 'name = "api"');
    files = edit(files, 'recipes/app.toml', '{{deps.db.exports.port}}', '{{deps.api.exports.port}}');
    files = append(files, 'recipes/proxy.toml', '\n[[dependencies]]\nname = "com.acme.db"\ntype = "ordering"\n');
    const diags = (await diagnosticsOf(noClient(files))).filter((d) => d.file === 'recipes/proxy.toml');
    expect(diags.map((d) => d.code)).toEqual([CODES.BIND_UNKNOWN]);
    expect(diags[0]!.message).toContain('gw/api');
    expect(diags[0]!.message).toMatch(/names both .*api/);
  });

  it("a plan component that depends on a member's recipe is pointed at the composite", async () => {
    const files = edit(BASE, 'recipes/client.toml', 'name = "com.acme.gw"', 'name = "com.acme.api"');
    // (Its binds to gw's exports are refused too, gw being no longer a dependency: not the subject here.)
    const diags = (await diagnosticsOf(files)).filter((d) => d.code === CODES.DEP_MISSING);
    expect(where(diags)).toEqual([
      {
        code: CODES.DEP_MISSING,
        file: 'recipes/client.toml',
        path: 'dependencies[0].name',
        line: lineOf(files, 'recipes/client.toml', 'name = "com.acme.api"'),
      },
    ]);
    expect(diags[0]!.hint).toBe('com.acme.api is a member of composite "gw": depend on the composite (com.acme.gw)');
  });

  it('a member or service named "work" or "logs" is refused (their directories sit beside the group\'s own)', async () => {
    const files = edit(BASE, 'recipes/gw.toml', 'name = "proxy"', 'name = "logs"');
    const diags = await diagnosticsOf(edit(files, 'recipes/gw.toml', '[config.proxy]', '[config.logs]'));
    expect(where(diags.filter((d) => d.code === CODES.BAD_NAME))).toEqual([
      {
        code: CODES.BAD_NAME,
        file: 'recipes/gw.toml',
        path: 'members[1].name',
        line: lineOf(files, 'recipes/gw.toml', 'name = "logs"'),
      },
    ]);
  });

  it('the install script takes placeholders too: resolved per unit, an unknown key refused', async () => {
    const files = edit(BASE, 'recipes/app.toml', 'script = "npm ci"', 'script = "npm ci --workers {{config.workers}}"');
    const r = await load(files);
    expect(r.ok).toBe(true);
    // A value is one single-quoted shell word in the script (SPEC §6).
    if (r.ok)
      expect(r.state.components.find((c) => c.name === 'app/web')!.recipe.lifecycle.install!.script).toBe(
        "npm ci --workers '2'",
      );
    const bad = edit(BASE, 'recipes/app.toml', 'script = "npm ci"', 'script = "npm ci {{config.nope}}"');
    expect(where(await diagnosticsOf(bad))).toEqual([
      {
        code: CODES.CONFIG_UNKNOWN,
        file: 'recipes/app.toml',
        path: 'lifecycle.install.script',
        line: lineOf(bad, 'recipes/app.toml', 'npm ci {{config.nope}}'),
      },
    ]);
  });

  it('a recipe that was valid before placeholders existed stays valid (JSON in env)', () => {
    const text = BASE['recipes/w.toml']!.replace(
      'command = "./worker"',
      'command = "./worker"\nenv = { CONFIG = \'{"log":{"level":"info"}}\' }',
    );
    expect(parseRecipe('recipes/w.toml', text).diagnostics).toEqual([]);
  });

  // Bug F asked for `check = "{{config.health}}"` to be checked once resolved instead of refused as a URL the author
  // never wrote. SPEC §6 now says more: a value cannot choose the kind of check (a plan value "cmd:…" would be a
  // command), so such a check is refused when the recipe is parsed, saying why and what to write instead.
  it("a health check that begins with a placeholder is refused: its kind (http, https, tcp, cmd) is the recipe's", async () => {
    let files = edit(
      BASE,
      'recipes/api.toml',
      'check = "http://127.0.0.1:{{config.port}}/health"',
      'check = "{{config.health}}"',
    );
    files = edit(files, 'recipes/api.toml', 'port = 8000\n', 'port = 8000\nhealth = "http://127.0.0.1:8000/health"\n');
    const diags = await diagnosticsOf(files);
    expect(where(diags)).toEqual([
      {
        code: CODES.BAD_HEALTH_CHECK,
        file: 'recipes/api.toml',
        path: 'lifecycle.run.health.check',
        line: lineOf(files, 'recipes/api.toml', 'check = "{{config.health}}"'),
      },
    ]);
    expect(diags[0]!.message).toMatch(/does not begin with its kind/);
    expect(diags[0]!.hint).toMatch(/http:\/\/, https:\/\/, tcp:\/\/ or cmd:/);
  });
});
