// keystonectl against a canned agent on loopback: what each command asks (method, path, query, token) and prints,
// and how the API's errors map to exit codes.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCtl } from '../../support/cli-run.js';
import { apiError, CannedAgent } from './canned-agent.js';

const NOW = Date.parse('2025-03-01T12:00:00Z');
/** The API's times are ISO strings. */
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

/** GET /v1/components as src/api/component-view.ts shapes it. */
const component = (c: {
  name: string;
  state: string;
  version: string;
  pid?: number;
  containerId?: string;
  health: string;
  restarts: number;
  since: string;
  reason?: string;
}) => ({
  runtime: c.containerId ? 'container' : 'process',
  hash: `sha256:${c.name}`,
  healthCheck: null,
  healthySince: null,
  held: c.state === 'crash-looping',
  revision: 'dir:3f2a9c1d0e4b',
  dependencies: [],
  ...c,
  pid: c.pid ?? null,
  containerId: c.containerId ?? null,
  reason: c.reason ?? null,
});
const COMPONENTS = [
  component({
    name: 'influxdb',
    state: 'running',
    version: '2.7.5',
    pid: 41002,
    health: 'healthy',
    restarts: 0,
    since: ago(190),
  }),
  component({
    name: 'api',
    state: 'running',
    version: '1.4.2',
    pid: 41088,
    health: 'healthy',
    restarts: 2,
    since: ago(45),
  }),
  component({
    name: 'telemetry',
    state: 'crash-looping',
    version: '0.9.0',
    health: 'unknown',
    restarts: 10,
    since: ago(7200),
    reason: 'crash-looping after 10 restarts',
  }),
  component({
    name: 'web',
    state: 'running',
    version: '3.0.0',
    containerId: '0123456789abcdef0123',
    health: 'healthy',
    restarts: 0,
    since: ago(3 * 86400),
  }),
];
const REVISION = {
  id: 'dir:3f2a9c1d0e4b',
  source: 'directory /srv/edge',
  planFile: 'plans/edge.toml',
  unsigned: false,
  signedAt: '2025-03-01T11:00:00.000Z',
  appliedAt: ago(200),
};

let agent: CannedAgent;
let stateDir: string;
beforeEach(async () => {
  agent = await new CannedAgent().listen();
  stateDir = mkdtempSync(join(tmpdir(), 'keystonectl-agent-'));
});
afterEach(async () => {
  await agent.close();
  rmSync(stateDir, { recursive: true, force: true });
});

/** keystonectl against the canned agent, at a fixed time, with an empty state directory unless told otherwise. */
const ctl = (args: string[], env: Record<string, string> = {}) =>
  runCtl([...args, '--agent', agent.url, '--state-dir', stateDir], '/', { now: () => NOW, env });

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('keystonectl status', () => {
  it('prints the revision on top and a row per component; its reads carry the token (every /v1 route needs it)', async () => {
    agent.on('GET /v1/components', COMPONENTS).on('GET /v1/revision', REVISION);
    const r = await ctl(['status'], { KEYSTONE_TOKEN: 'secret' });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'revision dir:3f2a9c1d0e4b  plan plans/edge.toml  applied 3m ago  signed 2025-03-01 11:00:00Z',
        'COMPONENT  STATE          VERSION  PID/CONTAINER  HEALTH   RESTARTS  SINCE    REASON',
        'influxdb   running        2.7.5    41002          healthy  0         3m ago',
        'api        running        1.4.2    41088          healthy  2         45s ago',
        'telemetry  crash-looping  0.9.0    -              unknown  10        2h ago   crash-looping after 10 restarts',
        'web        running        3.0.0    0123456789ab   healthy  0         3d ago',
        '',
      ].join('\n'),
    );
    expect(agent.requests.map((q) => `${q.method} ${q.path}`).sort()).toEqual([
      'GET /v1/components',
      'GET /v1/revision',
    ]);
    expect(agent.requests.map((q) => q.authorization)).toEqual(['Bearer secret', 'Bearer secret']);
    expect(agent.requests[0]!.host).toBe(new URL(agent.url).host);
  });

  it('without a reason anywhere there is no REASON column; an unsigned revision is said loudly', async () => {
    agent
      .on('GET /v1/components', { components: COMPONENTS.slice(0, 2) })
      .on('GET /v1/revision', { ...REVISION, unsigned: true, signedAt: null, warning: 'UNSIGNED: …' });
    const r = await ctl(['status']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(
      'revision dir:3f2a9c1d0e4b  plan plans/edge.toml  applied 3m ago  *** UNSIGNED: signatures are not checked (development only) ***',
    );
    expect(r.stdout.split('\n')[1]).toBe('COMPONENT  STATE    VERSION  PID/CONTAINER  HEALTH   RESTARTS  SINCE');
    expect(r.stderr).toMatch(/WARNING: the applied revision is UNSIGNED/);
  });

  it('before any apply: no revision (404) and no components', async () => {
    agent
      .on('GET /v1/components', [])
      .on('GET /v1/revision', apiError(404, 'KS_NO_REVISION', 'no revision applied yet'));
    const r = await ctl(['status']);
    expect(r).toMatchObject({ code: 0, stdout: 'revision: none applied yet\nno components\n' });
  });

  it('--json prints the API JSON: the revision and the components as they came', async () => {
    agent.on('GET /v1/components', COMPONENTS).on('GET /v1/revision', REVISION);
    const r = await ctl(['status', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ revision: REVISION, components: COMPONENTS });
  });

  it('nothing answering is exit 1, KS_AGENT_UNREACHABLE, naming the URL', async () => {
    const port = await closedPort();
    const r = await runCtl(['status', '--agent', `http://127.0.0.1:${port}`], '/');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no agent answers at http://127.0.0.1:${port} (ECONNREFUSED)`);
    expect(r.stderr).toContain('[KS_AGENT_UNREACHABLE]');
  });

  it('--agent without a scheme is taken as http; a bad URL is bad input', async () => {
    agent.on('GET /v1/components', []).on('GET /v1/revision', REVISION);
    expect((await runCtl(['status', '--agent', new URL(agent.url).host], '/')).code).toBe(0);
    const bad = await runCtl(['status', '--agent', 'ftp://127.0.0.1:21'], '/');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--agent must be an http or https URL/);
  });

  it('a 401 on a read (no token found) is exit 1, saying where a token would come from', async () => {
    agent
      .on('GET /v1/components', apiError(401, 'KS_TOKEN_MISSING', 'the API needs a token'))
      .on('GET /v1/revision', apiError(401, 'KS_TOKEN_MISSING', 'the API needs a token'));
    const r = await ctl(['status']);
    expect(r.code).toBe(1);
    expect(agent.requests.every((q) => q.authorization === undefined)).toBe(true);
    expect(r.stderr).toContain(
      `no token was sent: pass --token, set KEYSTONE_TOKEN, or run as a user who can read the token file (${join(stateDir, 'api-token')} is not readable (ENOENT))`,
    );
    expect(r.stderr).toContain('[KS_TOKEN_MISSING]');
  });

  it('something that is not the Keystone API is a failed operation, not a crash', async () => {
    agent.on('GET /v1/components', '<html>router login</html>').on('GET /v1/revision', REVISION);
    const r = await ctl(['status']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not JSON: is it a Keystone agent\? \[KS_AGENT_BAD_RESPONSE\]/);
  });
});

describe('keystonectl restart', () => {
  it('--dry-run prints the stop and start orders and sends the token', async () => {
    agent.on('POST /v1/components/influxdb:restart', {
      stopOrder: ['web', 'api', 'influxdb'],
      startOrder: ['influxdb', 'api', 'web'],
    });
    const r = await ctl(['restart', 'influxdb', '--dry-run', '--token', 'tok-flag']);
    expect(r).toMatchObject({ code: 0, stdout: 'stop: web api influxdb\nstart: influxdb api web\n', stderr: '' });
    expect(agent.requests).toEqual([
      expect.objectContaining({
        method: 'POST',
        path: '/v1/components/influxdb:restart',
        query: { dry: 'true' },
        authorization: 'Bearer tok-flag',
      }),
    ]);
    const json = await ctl(['restart', 'influxdb', '--dry-run', '--json', '--token', 'tok-flag']);
    expect(JSON.parse(json.stdout)).toEqual({
      stopOrder: ['web', 'api', 'influxdb'],
      startOrder: ['influxdb', 'api', 'web'],
    });
  });

  it('waits for health by default (2m0s) and prints the new pids of the component and its dependents', async () => {
    agent.on('POST /v1/components/influxdb:restart', {
      component: 'influxdb',
      pid: 41002,
      dependents: { api: 41088, web: 41120 },
      wait: 'health',
      timeout: '2m0s',
    });
    const r = await ctl(['restart', 'influxdb'], { KEYSTONE_TOKEN: 'tok-env' });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'restarted influxdb and 2 hard dependents: healthy again (timeout 2m0s)\n  influxdb  pid 41002\n  api       pid 41088\n  web       pid 41120\n',
    );
    expect(agent.requests[0]).toMatchObject({
      query: { wait: 'health', timeout: '2m0s' },
      authorization: 'Bearer tok-env',
    });
  });

  it('--wait and --timeout go to the API as given (the timeout Go-style)', async () => {
    agent.on('POST /v1/components/my.db-1:restart', {
      component: 'my.db-1',
      pid: 7,
      dependents: {},
      wait: 'started',
      timeout: '1m30s',
    });
    const r = await ctl(['restart', 'my.db-1', '--wait', 'started', '--timeout', '90s', '--token', 't']);
    expect(r).toMatchObject({ code: 0, stdout: 'restarted my.db-1: started (timeout 1m30s)\n  my.db-1  pid 7\n' });
    expect(agent.requests[0]).toMatchObject({
      path: '/v1/components/my.db-1:restart',
      query: { wait: 'started', timeout: '1m30s' },
    });
  });

  it('a timeout (504) is exit 1 with the state of each component', async () => {
    const components = [
      { name: 'influxdb', state: 'running', pid: 41002, reason: null, since: '2025-03-01T11:59:00.000Z' },
      {
        name: 'api',
        state: 'unhealthy',
        pid: 41088,
        reason: 'probe http://127.0.0.1:8086/health: 503',
        since: '2025-03-01T11:59:30.000Z',
      },
      { name: 'web', state: 'stopped', pid: null, reason: null, since: '2025-03-01T11:58:00.000Z' },
    ];
    agent.on(
      'POST /v1/components/influxdb:restart',
      apiError(504, 'KS_WAIT_TIMEOUT', 'the restart of influxdb did not finish within 2m0s; it goes on in the agent', {
        timeout: '2m0s',
        components,
      }),
    );
    const r = await ctl(['restart', 'influxdb', '--token', 't']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      [
        'keystonectl restart: the restart of influxdb did not finish within 2m0s; it goes on in the agent [KS_WAIT_TIMEOUT]',
        '  influxdb  running    pid 41002',
        '  api       unhealthy  pid 41088  (probe http://127.0.0.1:8086/health: 503)',
        '  web       stopped',
        '',
      ].join('\n'),
    );
    const json = await ctl(['restart', 'influxdb', '--token', 't', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { code: 'KS_WAIT_TIMEOUT', message: expect.any(String) },
      timeout: '2m0s',
      components,
    });
  });

  it('a component that failed to come back (502) is exit 1 too', async () => {
    agent.on(
      'POST /v1/components/api:restart',
      apiError(502, 'KS_RESTART_FAILED', 'the restart of api failed: api: exited with code 1', {
        failed: [{ name: 'api', reason: 'exited with code 1' }],
        components: [{ name: 'api', state: 'backoff', pid: null, reason: 'exited with code 1' }],
      }),
    );
    const r = await ctl(['restart', 'api', '--token', 't']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('  api  backoff  (exited with code 1)\n');
  });

  it('--wait none: the agent takes the restart (202) and the orders are printed', async () => {
    agent.on('POST /v1/components/influxdb:restart', {
      status: 202,
      body: {
        component: 'influxdb',
        stopOrder: ['web', 'api', 'influxdb'],
        startOrder: ['influxdb', 'api', 'web'],
        wait: 'none',
      },
    });
    const r = await ctl(['restart', 'influxdb', '--wait', 'none', '--token', 't']);
    expect(r).toMatchObject({
      code: 0,
      stdout:
        'restart of influxdb handed to the agent (not waited for)\nstop: web api influxdb\nstart: influxdb api web\n',
    });
    expect(agent.requests[0]!.query).toEqual({ wait: 'none', timeout: '2m0s' });
  });

  it('an unknown component (404) and a bad value (400) are bad input: exit 2', async () => {
    agent.on(
      'POST /v1/components/nope:restart',
      apiError(404, 'KS_COMPONENT_NOT_FOUND', 'no component "nope" in the applied revision'),
    );
    const r = await ctl(['restart', 'nope', '--token', 't']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toBe(
      'keystonectl restart: no component "nope" in the applied revision [KS_COMPONENT_NOT_FOUND]\n',
    );
    const json = await ctl(['restart', 'nope', '--token', 't', '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { code: 'KS_COMPONENT_NOT_FOUND', message: 'no component "nope" in the applied revision' },
    });

    agent.on('POST /v1/components/web:restart', apiError(400, 'KS_BAD_QUERY', 'timeout: "2m" exceeds the maximum'));
    expect((await ctl(['restart', 'web', '--token', 't'])).code).toBe(2);
  });

  it('bad flags and names are refused before anything is sent', async () => {
    for (const args of [
      ['restart', 'web', '--wait', 'forever'],
      ['restart', 'web', '--timeout', 'soon'],
      ['restart', 'web', '--timeout', '0'],
      ['restart', '../etc'],
      ['restart'],
      ['restart', 'a', 'b'],
    ]) {
      const r = await ctl(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/usage: keystonectl restart NAME/);
    }
    expect(agent.requests).toEqual([]);
  });

  it('the token: --token, else KEYSTONE_TOKEN, else <state-dir>/api-token', async () => {
    agent.on('POST /v1/components/web:restart', { stopOrder: ['web'], startOrder: ['web'] });
    writeFileSync(join(stateDir, 'api-token'), 'tok-file\n', { mode: 0o600 });
    await ctl(['restart', 'web', '--dry-run', '--token', 'tok-flag'], { KEYSTONE_TOKEN: 'tok-env' });
    await ctl(['restart', 'web', '--dry-run'], { KEYSTONE_TOKEN: 'tok-env' });
    await ctl(['restart', 'web', '--dry-run']);
    expect(agent.requests.map((q) => q.authorization)).toEqual([
      'Bearer tok-flag',
      'Bearer tok-env',
      'Bearer tok-file',
    ]);
  });

  it('a 401 without a token says where a token would come from; exit 1', async () => {
    agent.on('POST /v1/components/web:restart', apiError(401, 'KS_UNAUTHORIZED', 'a bearer token is required'));
    const r = await ctl(['restart', 'web']);
    expect(r.code).toBe(1);
    expect(agent.requests[0]!.authorization).toBeUndefined();
    expect(r.stderr).toContain(
      `a bearer token is required; no token was sent: pass --token, set KEYSTONE_TOKEN, or run as a user who can read the token file (${join(stateDir, 'api-token')} is not readable (ENOENT))`,
    );
    if (process.getuid?.() !== 0) {
      writeFileSync(join(stateDir, 'api-token'), 'tok', { mode: 0o600 });
      chmodSync(join(stateDir, 'api-token'), 0o000);
      expect((await ctl(['restart', 'web'])).stderr).toContain('is not readable (EACCES)');
    }
  });
});

describe('keystonectl stop and start', () => {
  it('stop prints what was stopped, dependents first, and that they are held', async () => {
    agent.on('POST /v1/components/influxdb:stop', {
      component: 'influxdb',
      stopOrder: ['web', 'api', 'influxdb'],
      stoppedDependents: ['web', 'api'],
      held: true,
    });
    const r = await ctl(['stop', 'influxdb', '--token', 't']);
    expect(r).toMatchObject({
      code: 0,
      stdout: 'stopped: web api influxdb\n(web, api depend hard on influxdb; held stopped until `keystonectl start`)\n',
    });
    expect(agent.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/components/influxdb:stop',
      query: { timeout: '2m0s' },
      authorization: 'Bearer t',
    });
  });

  it('start prints what was started with its pid, or that it was already running', async () => {
    agent.on('POST /v1/components/api:start', {
      component: 'api',
      pid: 5150,
      started: ['api'],
      wait: 'health',
      timeout: '2m0s',
    });
    expect((await ctl(['start', 'api', '--token', 't'])).stdout).toBe('started: api (pid 5150)\n');
    expect(agent.requests[0]).toMatchObject({
      path: '/v1/components/api:start',
      query: { wait: 'health', timeout: '2m0s' },
    });
    agent.on('POST /v1/components/api:start', {
      component: 'api',
      pid: 5150,
      started: [],
      wait: 'started',
      timeout: '30s',
    });
    expect((await ctl(['start', 'api', '--token', 't', '--wait', 'started', '--timeout', '30s'])).stdout).toBe(
      'api was already running (pid 5150)\n',
    );
    expect(agent.requests[1]!.query).toEqual({ wait: 'started', timeout: '30s' });
    const json = await ctl(['start', 'api', '--token', 't', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({
      component: 'api',
      pid: 5150,
      started: [],
      wait: 'started',
      timeout: '30s',
    });
  });

  it('an unknown component is exit 2', async () => {
    agent.on('POST /v1/components/ghost:stop', apiError(404, 'KS_COMPONENT_NOT_FOUND', 'no component "ghost"'));
    expect((await ctl(['stop', 'ghost', '--token', 't'])).code).toBe(2);
  });
});

describe('keystonectl history', () => {
  const ENTRIES = [
    {
      id: 12,
      revision: 'dir:3f2a9c1d0e4b',
      planFile: 'plans/edge.toml',
      startedAt: '2025-03-01T11:56:40.120Z',
      finishedAt: '2025-03-01T11:57:10.000Z',
      outcome: 'success',
      summary: '2 started, 2 stopped, 2 untouched',
      failed: [],
      reconcile: null,
    },
    {
      id: 11,
      revision: 'dir:77aa00bb11cc',
      planFile: 'plans/edge.toml',
      startedAt: '2025-03-01T09:00:00.000Z',
      finishedAt: '2025-03-01T09:00:00.000Z',
      outcome: 'rejected',
      summary: 'KS_SIGNATURE_INVALID: bad signature',
      failed: [],
      reconcile: null,
    },
    {
      id: 9,
      revision: 'dir:0000aaaa1111',
      planFile: 'plans/edge.toml',
      startedAt: '2025-02-28T23:00:00.000Z',
      finishedAt: null,
      outcome: 'applying',
      summary: null,
      failed: [],
      reconcile: null,
    },
  ];

  it('one line per apply: id, time, revision, outcome, summary', async () => {
    agent.on('GET /v1/history', { entries: ENTRIES, nextBefore: null });
    const r = await ctl(['history']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        '12  2025-03-01 11:56:40Z  dir:3f2a9c1d0e4b  success   2 started, 2 stopped, 2 untouched',
        '11  2025-03-01 09:00:00Z  dir:77aa00bb11cc  rejected  KS_SIGNATURE_INVALID: bad signature',
        '9   2025-02-28 23:00:00Z  dir:0000aaaa1111  applying',
        '',
      ].join('\n'),
    );
    expect(agent.requests[0]).toMatchObject({ method: 'GET', path: '/v1/history', query: {} });
    // The token file of the state directory, read for a read too.
    writeFileSync(join(stateDir, 'api-token'), 'tok-file\n', { mode: 0o600 });
    await ctl(['history']);
    expect(agent.requests[1]!.authorization).toBe('Bearer tok-file');
  });

  it('--limit and --before page; a full page says how to get older entries; --json is the API JSON', async () => {
    agent.on('GET /v1/history', { entries: ENTRIES.slice(0, 2), nextBefore: 11 });
    const r = await ctl(['history', '--limit', '2', '--before', '13']);
    expect(r.stdout.split('\n')).toHaveLength(3);
    expect(r.stderr).toBe('older entries: keystonectl history --limit 2 --before 11\n');
    expect(agent.requests[0]!.query).toEqual({ limit: '2', before: '13' });
    const json = await ctl(['history', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ entries: ENTRIES.slice(0, 2), nextBefore: 11 });
  });

  it('bad paging values are bad input', async () => {
    for (const args of [
      ['history', '--limit', '0'],
      ['history', '--limit', 'ten'],
      ['history', '--before', '-1'],
    ])
      expect((await ctl(args)).code).toBe(2);
    expect(agent.requests).toEqual([]);
  });
});
