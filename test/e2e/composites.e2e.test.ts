// Composite services (SPEC §12, issue 8) and replicas (issue 7) end to end: the real agent in directory mode, the
// real stand-in programs (fake-reports and fake-proxy of the example, run from a temp copy of the repository), its
// HTTP API on a free port. One agent per scenario; the steps of a scenario run in order on it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSameProcess } from '../../src/runtime/proc-identity.js';
import { runCtl } from '../support/cli-run.js';
import { CompositeAgent, compositeRepo, httpGet, q, until, type CompositeRepo } from '../support/composite-fixture.js';
import { freePorts } from '../support/stack-fixture.js';

interface View {
  name: string;
  state: string;
  pid: number | null;
  hash: string;
  version: string;
  kind?: string;
  held?: boolean;
  members?: View[];
  inputs?: Record<string, string> | null;
}

/** Fast probing with a generous budget (10 s), so a loaded machine does not fail a start. */
const FAST_HEALTH = ['interval = "200ms"', 'timeout = "1s"', 'failure_threshold = 50'];

/** name → pid of every unit the store records as a live process (checked against /proc: pid and start time). */
function livePids(ca: CompositeAgent): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of ca.h.components())
    if (c.state === 'running' && c.instance?.kind === 'process' && isSameProcess(c.instance.pid, c.instance.startTime))
      out[c.name] = c.instance.pid;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Several services from one recipe: web and jobs share the artifact and [config].

/** A worker: checks the shared artifact is in its work directory, then writes `<title> <generation>` every 100 ms. */
const JOBS_SCRIPT = [
  "const fs = require('fs');",
  'const [title, artifact, gen] = process.argv.slice(1);',
  'if (!fs.existsSync(artifact)) { console.error(`no ${artifact}`); process.exit(4); }',
  "const beat = () => fs.writeFileSync('heartbeat.tmp', `${title} ${gen} ${Date.now()}`) || fs.renameSync('heartbeat.tmp', 'heartbeat');",
  'beat(); setInterval(beat, 100);',
  "process.on('SIGTERM', () => process.exit(0));",
].join(' ');

function servicesRecipe(repo: CompositeRepo, port: number, jobsGeneration: string): string {
  return [
    '[metadata]',
    'name = "com.test.app"',
    'version = "1.0.0"',
    '',
    '[[artifacts]]',
    'uri = "../artifacts/fake-reports.mjs"',
    `sha256 = ${q(repo.sha('fake-reports.mjs'))}`,
    '',
    '[config]',
    `port = ${port}`,
    'title = "nightly"',
    '',
    '[lifecycle.services.web]',
    'restart_policy = "always"',
    '[lifecycle.services.web.exec]',
    'command = "node"',
    'args = ["fake-reports.mjs", "--port", "{{config.port}}", "--title", "{{config.title}}", "--version-label", "1.0.0"]',
    '[lifecycle.services.web.health]',
    'check = "http://127.0.0.1:{{config.port}}/health"',
    ...FAST_HEALTH,
    '',
    '[lifecycle.services.jobs]',
    'restart_policy = "always"',
    'after = ["web"]',
    '[lifecycle.services.jobs.exec]',
    'command = "node"',
    `args = ["-e", ${q(JOBS_SCRIPT)}, "{{config.title}}", "fake-reports.mjs", ${q(jobsGeneration)}]`,
    '[lifecycle.services.jobs.health]',
    'check = "cmd:test -s heartbeat"',
    ...FAST_HEALTH,
    '',
  ].join('\n');
}

const planOf = (...entries: string[]) => entries.join('\n');
const entry = (name: string, recipe: string, ...more: string[]) =>
  ['[[components]]', `name = ${q(name)}`, `recipe = ${q(recipe)}`, ...more, ''].join('\n');

describe('web + jobs from one recipe ([lifecycle.services])', { timeout: 60_000 }, () => {
  let repo: CompositeRepo;
  let ca: CompositeAgent;
  let port: number;
  const heartbeat = () => readFileSync(join(ca.h.workDir('app/jobs'), 'heartbeat'), 'utf8');

  beforeAll(async () => {
    [port] = (await freePorts(1)) as [number];
    repo = compositeRepo();
    repo.write({
      'recipes/app.toml': servicesRecipe(repo, port, 'gen1'),
      [repo.plan]: planOf(entry('app', 'recipes/app.toml')),
    });
    ca = new CompositeAgent(repo);
  });
  afterAll(async () => {
    await ca?.cleanup();
    repo?.cleanup();
  });

  it('both come up, jobs after web is healthy, sharing the artifact and the configuration', async () => {
    const end = await ca.start();
    expect(end.msg).toBe('all components running');
    const plan = ca.agent.lines((l) => l.msg === 'reconcile plan')[0]!;
    expect(plan).toMatchObject({ stop_order: [], start_order: ['app/web', 'app/jobs'], no_touch: [] });
    expect(ca.lines('app/jobs', 0, 'starting')[0]!.t).toBeGreaterThanOrEqual(ca.lines('app/web', 0, 'running')[0]!.t);
    // One config: web serves the title, jobs writes it; each found the shared artifact in its own work directory.
    expect((await httpGet(port)).json()).toMatchObject({ service: 'reports', title: 'nightly', port });
    expect(heartbeat()).toMatch(/^nightly gen1 /);
    const pids = livePids(ca);
    expect(Object.keys(pids).sort()).toEqual(['app/jobs', 'app/web']);
    expect(ca.h.processesOf('app/jobs').map((p) => p.pid)).toContain(pids['app/jobs']);
  });

  it('a change to the jobs command restarts only jobs', async () => {
    const before = livePids(ca);
    const { plan, end, mark } = await ca.push({ 'recipes/app.toml': servicesRecipe(repo, port, 'gen2') });
    expect(plan).toMatchObject({ stop_order: ['app/jobs'], start_order: ['app/jobs'], no_touch: ['app/web'] });
    expect(end.msg).toBe('all components running');
    const after = livePids(ca);
    expect(after['app/web']).toBe(before['app/web']);
    expect(after['app/jobs']).not.toBe(before['app/jobs']);
    expect(ca.lines('app/web', mark).filter((l) => l.state !== undefined)).toEqual([]);
    await until(() => /^nightly gen2 /.test(heartbeat()), 5_000, 'the new jobs to beat');
  });

  it('POST /v1/components/app:restart restarts both, web before jobs; the answer names both new pids', async () => {
    const before = livePids(ca);
    const mark = ca.agent.mark();
    const { status, body } = await ca.post<{
      component: string;
      members: Record<string, number>;
      dependents: Record<string, unknown>;
    }>('/v1/components/app:restart?wait=health&timeout=60s');
    expect(status).toBe(200);
    expect(body.component).toBe('app');
    expect(Object.keys(body.members).sort()).toEqual(['app/jobs', 'app/web']);
    const after = livePids(ca);
    expect(body.members).toEqual({ 'app/web': after['app/web'], 'app/jobs': after['app/jobs'] });
    for (const n of ['app/web', 'app/jobs']) expect(after[n], n).not.toBe(before[n]);
    expect(body.dependents).toEqual({});

    const requested = ca.agent.lines((l) => l.msg === 'restart requested', mark);
    expect(requested).toMatchObject([
      { component: 'app', stop_order: ['app/jobs', 'app/web'], start_order: ['app/web', 'app/jobs'] },
    ]);
    // Stopped dependents first, started in order: web healthy before jobs starts.
    const t = (n: string, s: string) => ca.lines(n, mark, s)[0]!.t;
    expect(t('app/jobs', 'stopping')).toBeLessThanOrEqual(t('app/web', 'stopping'));
    expect(t('app/web', 'starting')).toBeLessThanOrEqual(t('app/jobs', 'starting'));
    expect(t('app/jobs', 'starting')).toBeGreaterThanOrEqual(t('app/web', 'running'));
    expect((await httpGet(port)).status).toBe(200);
  });

  it('GET /v1/components/app nests both services; GET /v1/components/app/web is the one unit', async () => {
    const pids = livePids(ca);
    const app = await ca.get<View>('/v1/components/app');
    expect(app.status).toBe(200);
    expect(app.body).toMatchObject({ name: 'app', kind: 'services', state: 'running', version: '1.0.0', pid: null });
    expect(app.body.members!.map((m) => [m.name, m.state, m.pid])).toEqual([
      ['app/web', 'running', pids['app/web']],
      ['app/jobs', 'running', pids['app/jobs']],
    ]);
    const web = await ca.get<View>('/v1/components/app/web');
    expect(web.status).toBe(200);
    expect(web.body).toMatchObject({
      name: 'app/web',
      state: 'running',
      pid: pids['app/web'],
      inputs: { 'config.port': String(port), 'config.title': 'nightly' },
    });
    expect(web.body.members).toBeUndefined();
    expect((await ca.get('/v1/components/app/nope')).status).toBe(404);
  });

  it('POST app/web:restart restarts web alone (jobs only comes after it: an ordering edge)', async () => {
    const before = livePids(ca);
    const { status, body } = await ca.post<Record<string, unknown>>(
      '/v1/components/app/web:restart?wait=health&timeout=60s',
    );
    expect(status).toBe(200);
    const after = livePids(ca);
    expect(body).toMatchObject({ component: 'app/web', pid: after['app/web'], dependents: {} });
    expect(body.members).toBeUndefined();
    expect(after['app/web']).not.toBe(before['app/web']);
    expect(after['app/jobs']).toBe(before['app/jobs']);
  });

  it('a jobs change that never gets healthy: the apply fails and both services go back to what ran', async () => {
    const before = { web: ca.h.component('app/web')!, jobs: ca.h.component('app/jobs')!, pids: livePids(ca) };
    const broken = servicesRecipe(repo, port, 'gen3')
      .replace('check = "cmd:test -s heartbeat"', 'check = "cmd:test -s no-such-file"')
      .replace(
        /(check = "cmd:test -s no-such-file"\n)interval = "200ms"\ntimeout = "1s"\nfailure_threshold = 50/,
        '$1interval = "200ms"\ntimeout = "500ms"\nfailure_threshold = 5',
      );
    expect(broken).toContain('failure_threshold = 5\n');
    const { end, revision } = await ca.push({ 'recipes/app.toml': broken });
    expect(end.msg).toMatch(/^apply failed/);
    const entryOf = ca.h.history().find((e) => e.revision === revision)!;
    expect(entryOf).toMatchObject({ outcome: 'failure', failed: [{ name: 'app/jobs' }] });
    expect(entryOf.summary).toContain('app rolled back to its previous members');
    for (const [n, rec] of [
      ['app/web', before.web],
      ['app/jobs', before.jobs],
    ] as const)
      expect(ca.h.component(n), n).toMatchObject({ state: 'running', hash: rec.hash });
    expect(livePids(ca)['app/web']).toBe(before.pids['app/web']);
    await until(() => /^nightly gen2 /.test(heartbeat()), 5_000, 'the previous jobs to beat again');
    expect((await ca.get<View>('/v1/components/app')).body.state).toBe('running');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2–5. A sidecar composite: the API (fake-reports, exports its port) and its proxy (fake-proxy, binds that port).

interface ApiRecipe {
  version?: string;
}
function apiRecipe(repo: CompositeRepo, o: ApiRecipe = {}): string {
  const version = o.version ?? '0.9.0';
  return [
    '[metadata]',
    'name = "com.test.api"',
    `version = ${q(version)}`,
    '',
    '[[artifacts]]',
    'uri = "../artifacts/fake-reports.mjs"',
    `sha256 = ${q(repo.sha('fake-reports.mjs'))}`,
    '',
    '[config]',
    'port = 1',
    'title = "daily"',
    '',
    '[exports]',
    'port = "{{config.port}}"',
    '',
    '[lifecycle.run]',
    'restart_policy = "always"',
    '[lifecycle.run.exec]',
    'command = "node"',
    `args = ["fake-reports.mjs", "--port", "{{config.port}}", "--title", "{{config.title}}", "--version-label", ${q(version)}]`,
    '[lifecycle.run.health]',
    'check = "http://127.0.0.1:{{config.port}}/health"',
    ...FAST_HEALTH,
    '',
  ].join('\n');
}

interface ProxyRecipe {
  /** A health check that never passes (another port), with a short start budget: 200 ms × 5. */
  brokenCheckPort?: number;
}
function proxyRecipe(repo: CompositeRepo, o: ProxyRecipe = {}): string {
  const health =
    o.brokenCheckPort === undefined
      ? ['check = "http://127.0.0.1:{{config.listen}}/health"', ...FAST_HEALTH]
      : [
          `check = "http://127.0.0.1:${o.brokenCheckPort}/never"`,
          'interval = "200ms"',
          'timeout = "150ms"',
          'failure_threshold = 5',
        ];
  return [
    '[metadata]',
    'name = "com.test.proxy"',
    'version = "1.2.0"',
    '',
    '[[artifacts]]',
    'uri = "../artifacts/fake-proxy.mjs"',
    `sha256 = ${q(repo.sha('fake-proxy.mjs'))}`,
    '',
    '[config]',
    'listen = 1',
    'header = "keystone"',
    '',
    '[lifecycle.run]',
    'restart_policy = "always"',
    '[lifecycle.run.exec]',
    'command = "node"',
    'args = ["fake-proxy.mjs", "--listen", "{{config.listen}}", "--upstream", "http://127.0.0.1:{{deps.api.exports.port}}", "--header", "{{config.header}}"]',
    '[lifecycle.run.health]',
    ...health,
    '',
    '[[dependencies]]',
    'name = "com.test.api"',
    'type = "hard"',
    '',
  ].join('\n');
}

function compositeRecipe(apiPort: number, proxyPort: number, extraMember = false): string {
  return [
    '[metadata]',
    'name = "com.test.app"',
    'version = "2.0.0"',
    '',
    '[[members]]',
    'name = "api"',
    'recipe = "recipes/api.toml"',
    '',
    '[[members]]',
    'name = "proxy"',
    'recipe = "recipes/proxy.toml"',
    '',
    ...(extraMember ? ['[[members]]', 'name = "extra"', 'recipe = "recipes/extra.toml"', ''] : []),
    '[config.api]',
    `port = ${apiPort}`,
    '',
    '[config.proxy]',
    `listen = ${proxyPort}`,
    '',
  ].join('\n');
}

/** Another plan component, hard on the whole composite: a plain long-running process. */
const CLIENT_RECIPE = [
  '[metadata]',
  'name = "com.test.client"',
  'version = "1.0.0"',
  '',
  '[lifecycle.run]',
  'restart_policy = "always"',
  '[lifecycle.run.exec]',
  'command = "sleep"',
  'args = ["1000"]',
  '',
  '[[dependencies]]',
  'name = "com.test.app"',
  'type = "hard"',
  '',
].join('\n');

interface PlanOpts {
  /** `[components.config.api] port` in the plan entry. */
  apiPort?: number;
  /** `[components.config.proxy] header`. */
  header?: string;
  client?: boolean;
  /** A comment, to make a revision whose content (and id) differs from an earlier one's. */
  note?: string;
}
function compositePlan(o: PlanOpts = {}): string {
  const more: string[] = [];
  if (o.apiPort !== undefined) more.push('[components.config.api]', `port = ${o.apiPort}`);
  if (o.header !== undefined) more.push('[components.config.proxy]', `header = ${q(o.header)}`);
  return planOf(
    ...(o.note ? [`# ${o.note}`] : []),
    entry('app', 'recipes/app.toml', ...more),
    ...(o.client ? [entry('client', 'recipes/client.toml')] : []),
  );
}

describe('an API + proxy composite ([[members]], exports and binds)', { timeout: 60_000 }, () => {
  let repo: CompositeRepo;
  let ca: CompositeAgent;
  let apiPort: number;
  let apiPort2: number;
  let proxyPort: number;
  let closedPort: number;

  /** What the API answers through the proxy (its JSON and the proxy's header). */
  const throughProxy = async () => {
    const a = await httpGet(proxyPort);
    expect(a.status).toBe(200);
    return {
      ...a.json<{ service: string; port: number; version: string; title: string }>(),
      proxy: a.headers.get('x-proxy'),
    };
  };
  const view = async (name: string) => {
    const r = await ca.get<View>(`/v1/components/${name}`);
    expect(r.status, name).toBe(200);
    return r.body;
  };
  const record = (name: string) => ca.h.component(name)!;

  beforeAll(async () => {
    [apiPort, apiPort2, proxyPort, closedPort] = (await freePorts(4)) as [number, number, number, number];
    repo = compositeRepo();
    repo.write({
      'recipes/api.toml': apiRecipe(repo),
      'recipes/proxy.toml': proxyRecipe(repo),
      'recipes/app.toml': compositeRecipe(apiPort, proxyPort),
      [repo.plan]: compositePlan(),
    });
    ca = new CompositeAgent(repo);
  });
  afterAll(async () => {
    await ca?.cleanup();
    repo?.cleanup();
  });

  it('comes up api first; the proxy forwards real requests to the API on the port it exports', async () => {
    const end = await ca.start();
    expect(end.msg).toBe('all components running');
    expect(ca.agent.lines((l) => l.msg === 'reconcile plan')[0]).toMatchObject({
      start_order: ['app/api', 'app/proxy'],
    });
    expect(await throughProxy()).toMatchObject({
      service: 'reports',
      port: apiPort,
      version: '0.9.0',
      proxy: 'keystone',
    });
    expect((await view('app/proxy')).inputs).toMatchObject({
      'deps.api.exports.port': String(apiPort),
      'config.listen': String(proxyPort),
    });
  });

  it("changing the API's port (plan entry config) restarts both, and requests through the proxy reach the new port", async () => {
    const before = livePids(ca);
    const { plan, end, revision } = await ca.push({ [repo.plan]: compositePlan({ apiPort: apiPort2 }) });
    expect(plan).toMatchObject({
      stop_order: ['app/proxy', 'app/api'],
      start_order: ['app/api', 'app/proxy'],
      no_touch: [],
    });
    expect(end.msg).toBe('all components running');
    const after = livePids(ca);
    for (const n of ['app/api', 'app/proxy']) expect(after[n], n).not.toBe(before[n]);
    expect(await throughProxy()).toMatchObject({ port: apiPort2 });
    await expect(httpGet(apiPort), 'nothing on the old port').rejects.toThrow();
    // The reconcile says which value changed.
    const reasons = ca.h.history().find((e) => e.revision === revision)!.reconcile!.reasons;
    expect(reasons['app/api']).toContain(`config.port ${apiPort} → ${apiPort2}`);
    expect(reasons['app/proxy']).toContain(`deps.api.exports.port ${apiPort} → ${apiPort2}`);
  });

  it("changing only the proxy's config restarts only the proxy", async () => {
    const before = livePids(ca);
    const { plan, end, mark } = await ca.push({ [repo.plan]: compositePlan({ apiPort: apiPort2, header: 'edge-1' }) });
    expect(plan).toMatchObject({ stop_order: ['app/proxy'], start_order: ['app/proxy'], no_touch: ['app/api'] });
    expect(end.msg).toBe('all components running');
    const after = livePids(ca);
    expect(after['app/api']).toBe(before['app/api']);
    expect(after['app/proxy']).not.toBe(before['app/proxy']);
    expect(ca.lines('app/api', mark).filter((l) => l.state !== undefined)).toEqual([]);
    expect(await throughProxy()).toMatchObject({ port: apiPort2, proxy: 'edge-1' });
  });

  it('all or nothing: a revision whose new member never gets healthy fails and leaves the previous members serving', async () => {
    const before = { api: record('app/api'), proxy: record('app/proxy'), pids: livePids(ca) };
    // api 0.9.0 → 0.9.1 (it comes up fine) and a proxy whose check never passes: the whole composite goes back.
    const { end, revision, mark } = await ca.push({
      'recipes/api.toml': apiRecipe(repo, { version: '0.9.1' }),
      'recipes/proxy.toml': proxyRecipe(repo, { brokenCheckPort: closedPort }),
    });
    expect(end.msg).toMatch(/^apply failed/);
    const entryOf = ca.h.history().find((e) => e.revision === revision)!;
    expect(entryOf.outcome).toBe('failure');
    expect(entryOf.failed.map((f) => f.name)).toEqual(['app/proxy']);
    expect(entryOf.summary).toContain('app rolled back to its previous members');
    expect(
      ca.agent.lines(
        (l) => l.msg === 'a new member never got healthy: rolling the composite back to its previous members',
        mark,
      ),
    ).toHaveLength(1);
    // The new api did run (0.9.1) before the rollback took it back.
    expect(ca.lines('app/api', mark, 'running').length).toBeGreaterThanOrEqual(1);

    // The previous members: the same hashes and versions, running, live, and serving through the proxy.
    await until(async () => (await view('app')).state === 'running', 15_000, 'the composite to be running again');
    for (const [n, rec] of [
      ['app/api', before.api],
      ['app/proxy', before.proxy],
    ] as const) {
      const now = record(n);
      expect(now, n).toMatchObject({ state: 'running', hash: rec.hash, version: rec.version });
      expect(
        now.instance?.kind === 'process' && isSameProcess(now.instance.pid, now.instance.startTime),
        `${n} live`,
      ).toBe(true);
    }
    expect(await throughProxy()).toMatchObject({ port: apiPort2, version: '0.9.0', proxy: 'edge-1' });
    const app = await view('app');
    expect(app).toMatchObject({ name: 'app', state: 'running' });
    expect(app.members!.map((m) => [m.name, m.version, m.hash])).toEqual([
      ['app/api', '0.9.0', before.api.hash],
      ['app/proxy', '1.2.0', before.proxy.hash],
    ]);

    // Putting the good recipes back is a revision with nothing to do: what runs is exactly what it describes.
    const back = await ca.push({
      'recipes/api.toml': apiRecipe(repo),
      'recipes/proxy.toml': proxyRecipe(repo),
      [repo.plan]: compositePlan({ apiPort: apiPort2, header: 'edge-1', note: 'revert' }),
    });
    expect(back.plan).toMatchObject({ stop_order: [], start_order: [], no_touch: ['app/api', 'app/proxy'] });
    expect(back.end.msg).toBe('all components running');
  });

  it('status nests the members under the composite; stopping app/proxy makes it stopped, starting app brings it back', async () => {
    const list = await ca.get<View[]>('/v1/components');
    expect(list.status).toBe(200);
    expect(list.body.map((v) => v.name)).toEqual(['app']);
    const app = list.body[0]!;
    expect(app).toMatchObject({ name: 'app', kind: 'composite', state: 'running', version: '2.0.0', pid: null });
    expect(app.members!.map((m) => [m.name, m.state])).toEqual([
      ['app/api', 'running'],
      ['app/proxy', 'running'],
    ]);
    const ctl = await runCtl(['status', '--agent', `http://127.0.0.1:${ca.apiPort}`, '--token', ca.token], repo.dir);
    expect(ctl.code, ctl.stderr).toBe(0);
    expect(ctl.stdout).toMatch(/^app\s+running\s+2\.0\.0\s+2\/2 members up\s/m);
    expect(ctl.stdout).toMatch(/^├─ app\/api\s+running\s+0\.9\.0\s+\d+\s/m);
    expect(ctl.stdout).toMatch(/^└─ app\/proxy\s+running\s+1\.2\.0\s+\d+\s/m);

    const apiPid = livePids(ca)['app/api'];
    const stop = await ca.post('/v1/components/app/proxy:stop');
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({ component: 'app/proxy', stoppedDependents: [], held: true });
    const stopped = await view('app');
    expect(stopped.state).toBe('stopped');
    expect(stopped.members!.map((m) => [m.name, m.state])).toEqual([
      ['app/api', 'running'],
      ['app/proxy', 'stopped'],
    ]);
    expect(livePids(ca)['app/api']).toBe(apiPid);
    await expect(httpGet(proxyPort)).rejects.toThrow();
    expect((await httpGet(apiPort2)).status).toBe(200);

    const start = await ca.post<{ members: Record<string, number>; started: string[] }>(
      '/v1/components/app:start?wait=health&timeout=60s',
    );
    expect(start.status).toBe(200);
    expect(start.body.started).toEqual(['app/proxy']);
    const pids = livePids(ca);
    expect(start.body.members).toEqual({ 'app/api': apiPid, 'app/proxy': pids['app/proxy'] });
    expect((await view('app')).state).toBe('running');
    expect(await throughProxy()).toMatchObject({ port: apiPort2 });
  });

  it('a hard dependent of the composite restarts when any member restarts through a revision', async () => {
    const added = await ca.push({
      'recipes/client.toml': CLIENT_RECIPE,
      [repo.plan]: compositePlan({ apiPort: apiPort2, header: 'edge-1', client: true }),
    });
    expect(added.plan).toMatchObject({ start_order: ['client'], no_touch: ['app/api', 'app/proxy'] });
    expect(added.end.msg).toBe('all components running');
    expect(record('client').dependencies).toEqual([
      { component: 'app/api', type: 'hard' },
      { component: 'app/proxy', type: 'hard' },
    ]);

    // Only the proxy changes (not the member the others bind to): the client restarts with it, the api does not.
    const before = livePids(ca);
    const { plan, end } = await ca.push({
      [repo.plan]: compositePlan({ apiPort: apiPort2, header: 'edge-2', client: true }),
    });
    expect(plan).toMatchObject({
      stop_order: ['client', 'app/proxy'],
      start_order: ['app/proxy', 'client'],
      no_touch: ['app/api'],
    });
    expect(end.msg).toBe('all components running');
    const after = livePids(ca);
    expect(after['app/api']).toBe(before['app/api']);
    expect(after['app/proxy']).not.toBe(before['app/proxy']);
    expect(after.client).not.toBe(before.client);
    expect(await throughProxy()).toMatchObject({ proxy: 'edge-2' });

    // The other member (a new API version): the proxy restarts with it (hard, in the composite), and so does the client.
    const before2 = livePids(ca);
    const bump = await ca.push({ 'recipes/api.toml': apiRecipe(repo, { version: '0.9.2' }) });
    expect(bump.plan).toMatchObject({
      stop_order: ['client', 'app/proxy', 'app/api'],
      start_order: ['app/api', 'app/proxy', 'client'],
      no_touch: [],
    });
    expect(bump.end.msg).toBe('all components running');
    const after2 = livePids(ca);
    for (const n of ['app/api', 'app/proxy', 'client']) expect(after2[n], n).not.toBe(before2[n]);
    const t = (n: string, s: string) => ca.lines(n, bump.mark, s)[0]!.t;
    expect(t('client', 'starting')).toBeGreaterThanOrEqual(t('app/proxy', 'running'));
    expect(await throughProxy()).toMatchObject({ version: '0.9.2' });
  });

  it('at run time too: kill -9 of a member restarts its hard dependents once it is healthy again', async () => {
    const before = livePids(ca);
    const mark = ca.agent.mark();
    process.kill(before['app/api']!, 'SIGKILL');
    await ca.agent.waitForLog(
      (l) => l.msg === 'hard dependency restarted: restarting its hard dependents' && l.component === 'app/api',
      15_000,
      mark,
      'the cascade',
    );
    await ca.agent.waitForLog(
      (l) => l.component === 'client' && l.state === 'running',
      15_000,
      mark,
      'client running again',
    );
    const after = await until(
      () => {
        const p = livePids(ca);
        return ['app/api', 'app/proxy', 'client'].every((n) => p[n] !== undefined) && p;
      },
      10_000,
      'all three running',
    );
    for (const n of ['app/api', 'app/proxy', 'client']) expect(after[n], n).not.toBe(before[n]);
    expect(ca.lines('app/proxy', mark, 'starting')[0]!.t).toBeGreaterThanOrEqual(
      ca.lines('app/api', mark, 'running')[0]!.t,
    );
    expect(await throughProxy()).toMatchObject({ port: apiPort2, version: '0.9.2' });
    expect((await view('app')).state).toBe('running');
  });

  it('all or nothing with a hard dependent: the rollback starts the dependent again on the previous members', async () => {
    const before = { api: record('app/api'), proxy: record('app/proxy') };
    const { end, revision } = await ca.push({
      'recipes/proxy.toml': proxyRecipe(repo, { brokenCheckPort: closedPort }),
    });
    expect(end.msg).toMatch(/^apply failed/);
    expect(ca.h.history().find((e) => e.revision === revision)!.summary).toContain(
      'app rolled back to its previous members',
    );
    await until(
      () => ['app/api', 'app/proxy', 'client'].every((n) => record(n)?.state === 'running'),
      15_000,
      'api, proxy and client running',
    );
    expect(record('app/api').hash).toBe(before.api.hash);
    expect(record('app/proxy').hash).toBe(before.proxy.hash);
    expect(await throughProxy()).toMatchObject({ version: '0.9.2', proxy: 'edge-2' });
  });

  it('all or nothing when the revision adds a member that never gets healthy: the new member is removed, its dependent comes back', async () => {
    const before = { api: record('app/api'), proxy: record('app/proxy'), pids: livePids(ca) };
    const extra = [
      '[metadata]',
      'name = "com.test.extra"',
      'version = "1.0.0"',
      '[lifecycle.run]',
      '[lifecycle.run.exec]',
      'command = "sleep"',
      'args = ["1000"]',
      '[lifecycle.run.health]',
      `check = "http://127.0.0.1:${closedPort}/never"`,
      'interval = "200ms"',
      'timeout = "150ms"',
      'failure_threshold = 5',
      '',
    ].join('\n');
    try {
      const { end, revision } = await ca.push({
        'recipes/proxy.toml': proxyRecipe(repo),
        'recipes/extra.toml': extra,
        'recipes/app.toml': compositeRecipe(apiPort, proxyPort, true),
      });
      // The rollback runs inside the apply: once it has ended, what runs is final.
      expect(end.msg).toMatch(/^apply failed/);
      const entryOf = ca.h.history().find((e) => e.revision === revision)!;
      expect(entryOf.failed.map((f) => f.name)).toContain('app/extra');
      expect(entryOf.summary).toContain('app rolled back to its previous members');
      expect(ca.h.component('app/extra')).toBeUndefined();
      await until(() => ca.h.processesOf('app/extra').length === 0, 5_000, 'no process of app/extra left');
      expect((await view('app')).members!.map((m) => m.name)).toEqual(['app/api', 'app/proxy']);
      expect(livePids(ca)['app/api']).toBe(before.pids['app/api']);
      expect(record('app/proxy')).toMatchObject({ state: 'running', hash: before.proxy.hash });
      expect(await throughProxy()).toMatchObject({ version: '0.9.2' });
      expect(ca.agent.lines((l) => l.msg === 'the rollback did not bring every previous member back')).toEqual([]);
      expect(record('client')).toMatchObject({ state: 'running' });
    } finally {
      // Back to the two members (this also starts the client again), so the next test starts from a healthy device.
      const back = await ca.push({ 'recipes/app.toml': compositeRecipe(apiPort, proxyPort) });
      expect(back.end.msg).toBe('all components running');
    }
  });

  // Regression: the rollback used only the revision held in memory, so the first apply after an agent start (a revision
  // pushed while it was down) left the composite half-updated; the store now keeps each unit's spec to go back to.
  it('all or nothing after an agent restart: a broken revision found at start still rolls back to the members that ran', async () => {
    const before = { api: record('app/api'), proxy: record('app/proxy') };
    expect(await ca.agent.stop()).toEqual({ code: 0, signal: null });
    repo.write({
      'recipes/api.toml': apiRecipe(repo, { version: '0.9.3' }),
      'recipes/proxy.toml': proxyRecipe(repo, { brokenCheckPort: closedPort }),
    });
    const end = await ca.start();
    expect(end.msg).toMatch(/^apply failed/);
    const last = ca.h.history()[0]!;
    expect(last).toMatchObject({ revision: await repo.revisionId(), outcome: 'failure' });
    expect(last.summary).toContain('app rolled back to its previous members');
    for (const [n, rec] of [
      ['app/api', before.api],
      ['app/proxy', before.proxy],
    ] as const)
      expect(record(n), n).toMatchObject({ state: 'running', hash: rec.hash, version: rec.version });
    expect(await throughProxy()).toMatchObject({ version: '0.9.2' });
  });

  it('the same revision applied again after a rollback (another agent restart) restarts nothing: the composite stays at its previous members', async () => {
    const pids = livePids(ca);
    const revision = await repo.revisionId();
    expect(await ca.agent.stop()).toEqual({ code: 0, signal: null });
    await ca.start();
    const plan = ca.agent.lines((l) => l.msg === 'reconcile plan').at(-1)!;
    expect(plan).toMatchObject({ revision, stop_order: [], start_order: [] });
    expect(
      ca.agent.lines(
        (l) =>
          l.msg ===
          'this revision could not update these composites: they stay at their previous members until another revision',
      ),
    ).toHaveLength(1);
    expect(livePids(ca)).toEqual(pids);
    expect(await throughProxy()).toMatchObject({ version: '0.9.2' });
    // The operator sees it: the revision names the composite it could not update.
    const rev = await ca.get<{ rolledBack: Array<{ group: string; revision: string }> }>('/v1/revision');
    expect(rev.body.rolledBack).toEqual([{ group: 'app', revision }]);
  });

  it('killed in the middle of a composite update, the agent rolls back on its next start to what ran healthy before', async () => {
    // First back to a good revision (a new one: the held-back record is cleared), then a broken update, killed mid-way.
    const good = await ca.push({
      'recipes/api.toml': apiRecipe(repo, { version: '0.9.4' }),
      'recipes/proxy.toml': proxyRecipe(repo),
    });
    expect(good.end.msg).toBe('all components running');
    expect((await ca.get<{ rolledBack: unknown[] }>('/v1/revision')).body.rolledBack).toEqual([]);
    const before = { api: record('app/api'), proxy: record('app/proxy') };
    const mark = ca.agent.mark();
    repo.write({
      'recipes/api.toml': apiRecipe(repo, { version: '0.9.5' }),
      'recipes/proxy.toml': proxyRecipe(repo, { brokenCheckPort: closedPort }),
    });
    await ca.agent.waitForLog(
      (l) => l.component === 'app/proxy' && l.state === 'starting',
      30_000,
      mark,
      'the new proxy starting',
    );
    // By now the new api (0.9.5) is healthy and recorded; the proxy is not.
    expect(record('app/api').version).toBe('0.9.5');
    await ca.agent.kill9();
    const end = await ca.start();
    expect(end.msg).toMatch(/^apply failed/);
    expect(ca.h.history()[0]!.summary).toContain('app rolled back to its previous members');
    for (const [n, rec] of [
      ['app/api', before.api],
      ['app/proxy', before.proxy],
    ] as const)
      expect(record(n), n).toMatchObject({ state: 'running', hash: rec.hash, version: rec.version });
    expect(await throughProxy()).toMatchObject({ version: '0.9.4' });
  });

  it("a component that binds the composite's export goes back with it: it runs with the value of the members restored", async () => {
    const binder = [
      '[metadata]',
      'name = "com.test.binder"',
      'version = "1.0.0"',
      '[lifecycle.run]',
      '[lifecycle.run.exec]',
      'command = "sleep"',
      'args = ["1000", "{{deps.app.exports.port}}"]',
      '[[dependencies]]',
      'name = "com.test.app"',
      'type = "ordering"',
      '',
    ].join('\n');
    const good = await ca.push({
      'recipes/api.toml': apiRecipe(repo, { version: '0.9.4' }),
      'recipes/proxy.toml': proxyRecipe(repo),
      'recipes/binder.toml': binder,
      [repo.plan]: planOf(entry('app', 'recipes/app.toml'), entry('binder', 'recipes/binder.toml')),
    });
    expect(good.end.msg).toBe('all components running');
    expect(record('binder').inputs).toEqual({ 'deps.app.exports.port': String(apiPort) });
    // The API moves to another port and the proxy breaks: the rollback puts the API back on its port, and the binder too.
    const { end } = await ca.push({
      'recipes/proxy.toml': proxyRecipe(repo, { brokenCheckPort: closedPort }),
      [repo.plan]: planOf(
        entry('app', 'recipes/app.toml', '[components.config.api]', `port = ${apiPort2}`),
        entry('binder', 'recipes/binder.toml'),
      ),
    });
    expect(end.msg).toMatch(/^apply failed/);
    expect(ca.h.history()[0]!.summary).toContain('app rolled back to its previous members');
    await until(() => record('binder')?.state === 'running', 15_000, 'binder running');
    expect(record('app/api').inputs).toMatchObject({ 'config.port': String(apiPort) });
    expect(record('binder').inputs).toEqual({ 'deps.app.exports.port': String(apiPort) });
    expect(await throughProxy()).toMatchObject({ version: '0.9.4', port: apiPort });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 6. Replicas (issue 7): one unit per replica, w/1..N; no ports: each writes a heartbeat file, checked by a cmd: check.

function replicasRecipe(replicas: number): string {
  return [
    '[metadata]',
    'name = "com.test.w"',
    'version = "1.0.0"',
    '',
    '[lifecycle.run]',
    'restart_policy = "always"',
    `replicas = ${replicas}`,
    '[lifecycle.run.exec]',
    'command = "sh"',
    'args = ["-c", "date +%s%N > heartbeat && exec sleep 1000"]',
    '[lifecycle.run.health]',
    'check = "cmd:test -s heartbeat"',
    ...FAST_HEALTH,
    '',
  ].join('\n');
}

describe('replicas = N', { timeout: 60_000 }, () => {
  let repo: CompositeRepo;
  let ca: CompositeAgent;
  const names = (n: number, from = 1) => Array.from({ length: n - from + 1 }, (_x, i) => `w/${from + i}`);
  /** The pids of w's replicas that run, each checked to be the recorded process and alive under its work directory. */
  const replicaPids = () => {
    const pids = livePids(ca);
    for (const [n, pid] of Object.entries(pids))
      expect(
        ca.h.processesOf(n).map((p) => p.pid),
        n,
      ).toContain(pid);
    return pids;
  };
  const group = async (path = '/v1/components') => {
    const r = await ca.get<View[] | View>(path);
    expect(r.status).toBe(200);
    const all = Array.isArray(r.body) ? r.body : [r.body];
    return all.find((v) => v.name === 'w')!;
  };

  beforeAll(() => {
    repo = compositeRepo();
    repo.write({ 'recipes/w.toml': replicasRecipe(3), [repo.plan]: planOf(entry('w', 'recipes/w.toml')) });
    ca = new CompositeAgent(repo);
  });
  afterAll(async () => {
    await ca?.cleanup();
    repo?.cleanup();
  });

  it('replicas = 3 runs w/1..3', async () => {
    expect((await ca.start()).msg).toBe('all components running');
    expect(Object.keys(replicaPids()).sort()).toEqual(names(3));
    const w = await group();
    expect(w).toMatchObject({ name: 'w', kind: 'replicas', state: 'running' });
    expect(w.members!.map((m) => [m.name, m.state])).toEqual(names(3).map((n) => [n, 'running']));
  });

  it('3 → 5 starts w/4 and w/5 and leaves w/1..3 alone', async () => {
    const before = replicaPids();
    const { plan, end, mark } = await ca.push({ 'recipes/w.toml': replicasRecipe(5) });
    expect(plan).toMatchObject({ stop_order: [], start_order: ['w/4', 'w/5'], no_touch: names(3) });
    expect(end.msg).toBe('all components running');
    const after = replicaPids();
    expect(Object.keys(after).sort()).toEqual(names(5));
    for (const n of names(3)) expect(after[n], n).toBe(before[n]);
    for (const n of names(3))
      expect(
        ca.lines(n, mark).filter((l) => l.state !== undefined),
        n,
      ).toEqual([]);
    expect((await group()).members!.map((m) => m.name)).toEqual(names(5));
  });

  it('POST w:restart restarts every replica and answers with their new pids', async () => {
    const before = replicaPids();
    const { status, body } = await ca.post<{ members: Record<string, number> }>(
      '/v1/components/w:restart?wait=health&timeout=60s',
    );
    expect(status).toBe(200);
    const after = replicaPids();
    expect(body.members).toEqual(after);
    expect(Object.keys(after).sort()).toEqual(names(5));
    for (const n of names(5)) expect(after[n], n).not.toBe(before[n]);
  });

  it('kill -9 of the agent and a new start adopts every replica and restarts none', async () => {
    const before = replicaPids();
    expect((await ca.agent.kill9()).signal).toBe('SIGKILL');
    expect(replicaPids()).toEqual(before);
    const end = await ca.start();
    expect(end.msg).toBe('resumed the revision applied last: its outcome stands (success); all components running');
    expect(ca.agent.lines((l) => l.msg === 'reconcile plan')[0]).toMatchObject({
      stop_order: [],
      start_order: [],
      no_touch: names(5),
    });
    expect(ca.agent.lines((l) => l.msg === 'adopted running instance').map((l) => [l.component, l.pid])).toEqual(
      names(5).map((n) => [n, before[n]]),
    );
    expect(ca.agent.lines((l) => l.state === 'starting' || l.state === 'stopping')).toEqual([]);
    expect(replicaPids()).toEqual(before);
    expect((await group()).members!.map((m) => [m.name, m.pid])).toEqual(names(5).map((n) => [n, before[n]]));
  });

  it('5 → 2 stops w/3..5 and leaves w/1 and w/2 alone', async () => {
    const before = replicaPids();
    const { plan, end } = await ca.push({ 'recipes/w.toml': replicasRecipe(2) });
    expect(plan.start_order).toEqual([]);
    expect([...(plan.stop_order as string[])].sort()).toEqual(names(5, 3));
    expect(plan.no_touch).toEqual(names(2));
    expect(end.msg).toBe('all components running');
    const after = replicaPids();
    expect(after).toEqual({ 'w/1': before['w/1'], 'w/2': before['w/2'] });
    // A health probe (`test -s heartbeat`, run in the work directory) may still be finishing there.
    for (const n of names(5, 3))
      await until(() => ca.h.processesOf(n).length === 0, 3_000, `no process left in ${n}'s work directory`);
    expect(
      ca.h
        .components()
        .map((c) => c.name)
        .sort(),
    ).toEqual(names(2));
  });

  it('replicas = 0 leaves no running member; the group shows as stopped with members: []', async () => {
    const { plan, end } = await ca.push({ 'recipes/w.toml': replicasRecipe(0) });
    expect([...(plan.stop_order as string[])].sort()).toEqual(names(2));
    expect(plan.start_order).toEqual([]);
    expect(end.msg).toMatch(/^(all components running|apply finished)$/);
    await until(() => ca.h.processes().length === 0, 3_000, 'no process left under the state directory');
    expect(livePids(ca)).toEqual({});
    for (const w of [await group(), await group('/v1/components/w')])
      expect(w).toMatchObject({ name: 'w', kind: 'replicas', state: 'stopped', members: [] });
    expect(ca.h.history()[0]).toMatchObject({ outcome: 'success' });
  });
});
