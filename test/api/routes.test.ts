// The routes of SPEC §10 against a running agent (HTTP requests, test/support/http-inject.ts): shapes, the `{name}:action` path with dots and
// dashes, strict query values, every wait mode (health, started, none, a timeout's 504, a failure's 502), stop and
// start with their dependents, the revision, paged history, sync and the webhook when it is off.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import type { AgentEventMap } from '../../src/agent/agent.js';
import { sleeper, type ComponentSpec } from '../support/stack-fixture.js';
import { apiStack, until, type ApiStack } from './api-stack.js';

const DOTTED = 'com.acme-x.y';

/** Healthy about a second after each start: `ready` appears in its work directory, which the check looks for. */
function slow(): ComponentSpec {
  return {
    name: 'slow',
    version: '1.0.0',
    command: 'sh',
    args: ['-c', 'rm -f ready; sleep 1; touch ready; exec sleep 1000'],
    health: { check: 'cmd:test -f ready', interval: '100ms', timeout: '1s', failureThreshold: 100 },
  };
}

/** Healthy while the test's file exists; its start budget is 0.5 s. */
function gated(file: string): ComponentSpec {
  return {
    ...sleeper('gate'),
    health: { check: `cmd:test -f ${file}`, interval: '100ms', timeout: '1s', failureThreshold: 5 },
  };
}

type Json = Record<string, unknown>;

describe('API routes', { timeout: 30_000 }, () => {
  let s: ApiStack;
  let gateDir: string;
  let gateFile: string;

  beforeAll(async () => {
    gateDir = mkdtempSync(join(tmpdir(), 'keystone-api-gate-'));
    // The check runs as the component's user (the device's unprivileged default): it must see the file.
    chmodSync(gateDir, 0o755);
    gateFile = join(gateDir, 'ok');
    writeFileSync(gateFile, '');
    s = await apiStack({
      components: () => [
        sleeper('db'),
        sleeper(DOTTED, [{ component: 'db', type: 'hard' }]),
        sleeper('side', [{ component: 'db', type: 'ordering' }]),
        slow(),
        gated(gateFile),
      ],
    });
  });
  afterAll(async () => {
    await s?.close();
    if (gateDir) rmSync(gateDir, { recursive: true, force: true });
  });

  const get = async (url: string) => {
    const r = await s.get(url);
    return { status: r.statusCode, body: r.json<Json>(), headers: r.headers };
  };
  const post = async (url: string) => {
    const r = await inject(s.server, { method: 'POST', url, headers: { authorization: `Bearer ${s.token}` } });
    return { status: r.statusCode, body: r.json<Json>() };
  };
  const code = (body: Json) => (body.error as { code: string }).code;
  const stateOf = (name: string) => s.agent.store.component(name)?.state;

  it('GET /v1/components lists every component in start order with its live instance', async () => {
    const r = await get('/v1/components');
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toBe('no-store');
    const list = r.body as unknown as Json[];
    expect(list.map((c) => c.name)).toEqual(['db', 'slow', 'gate', DOTTED, 'side']);
    const pids = s.livePids();
    const db = list[0]!;
    expect(Object.keys(db)).toEqual([
      'name',
      'state',
      'pid',
      'containerId',
      'version',
      'hash',
      'runtime',
      'health',
      'healthCheck',
      'restarts',
      'since',
      'healthySince',
      'reason',
      'held',
      'revision',
      'dependencies',
      'inputs',
      'lastExit',
    ]);
    expect(db).toMatchObject({
      name: 'db',
      state: 'running',
      pid: pids.db,
      containerId: null,
      version: '1.0.0',
      runtime: 'process',
      health: 'healthy',
      healthCheck: null,
      restarts: 0,
      reason: null,
      held: false,
      dependencies: [],
    });
    expect(db.hash).toMatch(/^v1:[0-9a-f]{64}$/);
    expect(new Date(db.since as string).toISOString()).toBe(db.since);
    expect(list.find((c) => c.name === 'slow')).toMatchObject({ healthCheck: 'cmd:test -f ready', health: 'healthy' });
    expect(list.find((c) => c.name === DOTTED)).toMatchObject({ dependencies: [{ component: 'db', type: 'hard' }] });
  });

  it('GET /v1/components/{name} takes names with dots and dashes; unknown names are JSON 404s, bad ones 400s', async () => {
    const r = await get(`/v1/components/${DOTTED}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: DOTTED, state: 'running' });
    const missing = await get('/v1/components/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      error: { code: 'KS_COMPONENT_NOT_FOUND', message: expect.stringContaining('"nope"') },
    });
    expect(code((await get('/v1/components/bad..name')).body)).toBe('KS_BAD_NAME');
    expect((await get('/v1/components/-x')).status).toBe(400);
    expect((await get(`/v1/components/${DOTTED}:restart`)).status).toBe(404);
  });

  it('restart ?dry=true gives the hard cascade only, for dotted names too', async () => {
    expect(await post('/v1/components/db:restart?dry=true')).toEqual({
      status: 200,
      body: { stopOrder: [DOTTED, 'db'], startOrder: ['db', DOTTED] },
    });
    expect(await post(`/v1/components/${DOTTED}:restart?dry=true`)).toEqual({
      status: 200,
      body: { stopOrder: [DOTTED], startOrder: [DOTTED] },
    });
    expect(await post('/v1/components/db:restart?dry=false&wait=none')).toMatchObject({ status: 202 });
    await until(
      () => stateOf('db') === 'running' && stateOf(DOTTED) === 'running',
      'db and its dependent running again',
    );
  });

  it('unknown components, actions and bad query values are refused, and nothing restarts', async () => {
    const before = s.livePids();
    const changes: string[] = [];
    const onState = (e: AgentEventMap['state'][0]) => changes.push(e.component);
    s.agent.events.on('state', onState);
    try {
      for (const url of [
        '/v1/components/nope:restart',
        '/v1/components/nope:restart?dry=true',
        '/v1/components/nope:stop',
        '/v1/components/nope:start',
      ]) {
        const r = await post(url);
        expect(r.status, url).toBe(404);
        expect(code(r.body), url).toBe('KS_COMPONENT_NOT_FOUND');
      }
      for (const url of ['/v1/components/db:explode', '/v1/components/db', '/v1/components/db:'])
        expect((await post(url)).status, url).toBe(404);
      for (const q of [
        'wait=soon',
        'timeout=abc',
        'dry=maybe',
        'dry',
        'timeout=0',
        'timeout=-1s',
        'timeout=2h',
        'dryrun=true',
        'dry=true&dry=false',
        'wait=HEALTH',
      ]) {
        const r = await post(`/v1/components/db:restart?${q}`);
        expect(r.status, q).toBe(400);
        expect(code(r.body), q).toBe('KS_BAD_QUERY');
      }
      expect((await post('/v1/components/db:stop?wait=health')).status).toBe(400);
      expect((await post('/v1/components/db:start?timeout=soon')).status).toBe(400);
    } finally {
      s.agent.events.off('state', onState);
    }
    expect(changes).toEqual([]);
    expect(s.livePids()).toEqual(before);
  });

  it('wait=started answers once the new instance is spawned, before it is healthy', async () => {
    const before = s.livePids().slow;
    const r = await post('/v1/components/slow:restart?wait=started&timeout=10s');
    const state = stateOf('slow');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      component: 'slow',
      pid: s.livePids().slow,
      dependents: {},
      wait: 'started',
      timeout: '10s',
    });
    expect(r.body.pid).not.toBe(before);
    expect(state).toBe('starting');
    await until(() => stateOf('slow') === 'running', 'slow healthy');
  });

  it('a wait that times out answers 504 with the state of each component; the restart goes on', async () => {
    const before = s.livePids().slow;
    const r = await post('/v1/components/slow:restart?timeout=300ms');
    expect(r.status).toBe(504);
    expect(code(r.body)).toBe('KS_WAIT_TIMEOUT');
    expect(r.body.timeout).toBe('300ms');
    const components = r.body.components as Json[];
    expect(components).toHaveLength(1);
    expect(components[0]).toMatchObject({ name: 'slow' });
    // Not yet the new healthy instance: on its way, or (a busy machine, the restart not begun within 300 ms) the old one.
    const at504 = components[0]!;
    if (at504.state === 'running')
      expect(at504.pid, 'running at the 504: only the instance before the restart').toBe(before);
    else expect(['installing', 'starting', 'stopping', 'stopped']).toContain(at504.state);
    await until(() => stateOf('slow') === 'running', 'slow healthy after the timeout');
    expect(s.livePids().slow).not.toBe(before);
  });

  it('a restart whose component does not become healthy answers 502 with what failed', async () => {
    rmSync(gateFile);
    const r = await post('/v1/components/gate:restart?timeout=20s');
    expect(r.status).toBe(502);
    expect(code(r.body)).toBe('KS_RESTART_FAILED');
    expect(r.body.failed).toEqual([
      { name: 'gate', reason: expect.stringMatching(/not healthy within its start budget/) },
    ]);
    expect(r.body.components).toEqual([expect.objectContaining({ name: 'gate', state: 'unhealthy' })]);
    writeFileSync(gateFile, '');
    await until(() => stateOf('gate') === 'running', 'gate healthy again');
  });

  it(':stop stops the hard dependents first and holds them; :start starts its stopped dependencies first', async () => {
    const sidePid = s.livePids().side;
    const stop = await post('/v1/components/db:stop');
    expect(stop).toEqual({
      status: 200,
      body: { component: 'db', stopOrder: [DOTTED, 'db'], stoppedDependents: [DOTTED], held: true },
    });
    const list = (await get('/v1/components')).body as unknown as Json[];
    for (const name of ['db', DOTTED])
      expect(list.find((c) => c.name === name)).toMatchObject({ state: 'stopped', held: true, pid: null });
    // The ordering dependent is left alone.
    expect(s.livePids().side).toBe(sidePid);

    // Starting a dependent starts its stopped dependency first (SPEC: starting waits for its dependencies).
    const dotted = await post(`/v1/components/${DOTTED}:start?timeout=30s`);
    expect(dotted).toMatchObject({ status: 200, body: { component: DOTTED, started: ['db', DOTTED], timeout: '30s' } });
    expect((await get('/v1/components/db')).body).toMatchObject({ state: 'running', held: false });
    expect(s.livePids().side).toBe(sidePid);
    // Starting what runs starts nothing.
    expect(await post('/v1/components/db:start?wait=started')).toMatchObject({
      status: 200,
      body: { started: [], pid: s.livePids().db },
    });
    expect((await get(`/v1/components/${DOTTED}`)).body).toMatchObject({ state: 'running', held: false });
  });

  it('GET /v1/revision flags an unsigned revision', async () => {
    const r = await get('/v1/revision');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      id: await s.fx.revisionId(),
      planFile: s.fx.plan,
      unsigned: true,
      signedAt: null,
      warning: expect.stringContaining('UNSIGNED'),
    });
    expect(new Date(r.body.appliedAt as string).getTime()).toBeGreaterThan(0);
  });

  it('GET /v1/history pages newest first', async () => {
    for (const n of [1, 2, 3])
      s.agent.store.recordRejected({
        revision: `dir:rejected${n}`,
        planFile: s.fx.plan,
        at: Date.now(),
        reason: `test ${n}`,
      });
    const first = await get('/v1/history?limit=2');
    expect(first.status).toBe(200);
    const entries = first.body.entries as Json[];
    expect(entries.map((e) => e.revision)).toEqual(['dir:rejected3', 'dir:rejected2']);
    expect(entries[0]).toMatchObject({ outcome: 'rejected', summary: 'test 3', reconcile: null, failed: [] });
    expect(first.body.nextBefore).toBe(entries[1]!.id);
    expect(first.body.waiting).toBeNull();
    const second = await get(`/v1/history?limit=2&before=${first.body.nextBefore as number}`);
    expect((second.body.entries as Json[]).map((e) => e.revision)).toEqual(['dir:rejected1', await s.fx.revisionId()]);
    const last = await get(`/v1/history?limit=2&before=${second.body.nextBefore as number}`);
    expect(last.body).toEqual({ entries: [], nextBefore: null, waiting: null });
    const applied = (second.body.entries as Json[])[1]!;
    expect(applied).toMatchObject({
      outcome: 'success',
      reconcile: expect.objectContaining({ startOrder: ['db', 'slow', 'gate', DOTTED, 'side'] }),
    });
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'before=abc', 'before=-1', 'page=2'])
      expect((await get(`/v1/history?${q}`)).status, q).toBe(400);
  });

  it('POST /v1/sync asks the source to look now (202), or says no source can (503)', async () => {
    expect(await post('/v1/sync')).toEqual({
      status: 503,
      body: { error: { code: 'KS_SYNC_UNAVAILABLE', message: expect.any(String) } },
    });
    let looks = 0;
    s.agent.onSync(async () => void looks++);
    expect(await post('/v1/sync')).toEqual({ status: 202, body: { sync: 'requested' } });
    await until(() => looks === 1, 'the source to look');
  });

  it('POST /v1/webhooks/github answers 503 KS_WEBHOOK_DISABLED on an agent without a webhook secret (webhook.test.ts has the rest)', async () => {
    const r = await post('/v1/webhooks/github');
    expect(r.status).toBe(503);
    expect(code(r.body)).toBe('KS_WEBHOOK_DISABLED');
    // Its own door (an HMAC, not the token): without the token it is the same answer, and nothing was asked of the agent.
    expect((await inject(s.server, { method: 'POST', url: '/v1/webhooks/github' })).statusCode).toBe(503);
  });

  it('GET /healthz is cheap liveness; unknown routes are JSON 404s', async () => {
    expect(await get('/healthz')).toMatchObject({
      status: 200,
      body: { status: 'ok', uptimeSeconds: expect.any(Number) },
    });
    expect(await get('/v2/nothing')).toMatchObject({ status: 404, body: { error: { code: 'KS_NOT_FOUND' } } });
  });
});
