// Issue 17 in the API (HTTP requests to an in-process agent with real processes): GET /v1/revision names the
// agent (pid, version) and the newest refused revision, in its 404 too (a device whose first revision is refused);
// POST /v1/sync?wait=done answers with what became of the look (applied, rejected, unchanged), a look that failed
// (502), one that outlives its timeout (504), bad query values (400); without wait it is the 202 it always was.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import { startAgent, type Agent } from '../../src/agent/agent.js';
import { buildServer, type ApiServer } from '../../src/api/build-server.js';
import { createLogger } from '../../src/log/logger.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { DirectorySource } from '../../src/source/directory-source.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { apiStack, type ApiStack } from './api-stack.js';

type Json = Record<string, unknown>;

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

describe('GET /v1/revision: the agent and the newest refused revision', { timeout: 30_000 }, () => {
  let fx: StackFixture;
  let stateDir: string;
  let agent: Agent;
  let server: ApiServer;
  const get = async (url: string) => {
    const r = await inject(server, { method: 'GET', url, headers: { authorization: 'Bearer t' } });
    return { status: r.statusCode, body: r.json<Json>() };
  };

  beforeAll(async () => {
    fx = await stackFixture({ signed: false, components: () => [sleeper('db')] });
    stateDir = mkdtempSync(join(tmpdir(), 'keystone-api-rejected-'));
    agent = await startAgent({
      planFile: fx.plan,
      stateDir,
      trust: { unsigned: true },
      log: createLogger({ pretty: false, write: () => undefined }),
      runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
      probe: async () => ({ ok: true, detail: 'no health check', latencyMs: 0 }),
      concurrency: 2,
      graceMs: 2000,
    });
    server = buildServer({
      agent,
      token: 't',
      self: { pid: 4242, version: '9.9.9' },
      now: () => Date.parse('2026-01-02T03:04:05Z'),
    });
  });
  afterAll(async () => {
    await server?.close();
    await agent?.close({ stopComponents: true });
    fx?.cleanup();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('before anything is applied, the 404 carries the agent and no refusal', async () => {
    expect(await get('/v1/revision')).toEqual({
      status: 404,
      body: {
        error: { code: 'KS_NO_REVISION', message: 'no revision has been applied on this device yet' },
        agent: {
          pid: 4242,
          version: '9.9.9',
          startedAt: '2026-01-02T03:04:05.000Z',
          health: expect.objectContaining({ uptimeS: expect.any(Number) }) as unknown,
        },
        rejected: null,
      },
    });
  });

  it('a first revision refused is in the 404, with its code', async () => {
    fx.edit(fx.recipePath('db'), 'restart_policy', 'restart_polcy');
    agent.offer({ id: 'dir:bad', origin: 'directory', source: 'test', reader: new DirectoryReader(fx.dir) });
    await agent.idle();
    const r = await get('/v1/revision');
    expect(r.status).toBe(404);
    const rejected = r.body.rejected as Json;
    expect(rejected).toMatchObject({ revision: 'dir:bad', code: 'KS_UNKNOWN_KEY' });
    expect(rejected.reason).toMatch(
      /^invalid: 1 error\(s\), first: recipes\/db\.toml:\d+: lifecycle\.run\.restart_polcy: unknown key .*\[KS_UNKNOWN_KEY\]$/,
    );
    expect(Date.parse(rejected.at as string)).not.toBeNaN();
  });

  it('once a revision is applied it carries both; the refusal is cleared by the apply after it', async () => {
    fx.edit(fx.recipePath('db'), 'restart_polcy', 'restart_policy');
    agent.offer({ id: 'dir:good', origin: 'directory', source: 'test', reader: new DirectoryReader(fx.dir) });
    await agent.idle();
    const r = await get('/v1/revision');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: 'dir:good', agent: { pid: 4242, version: '9.9.9' }, rejected: null });
  });

  it("a server built without `self` names its own process and the package's version", async () => {
    const own = buildServer({ agent, token: 't' });
    try {
      const r = await inject(own, { method: 'GET', url: '/v1/revision', headers: { authorization: 'Bearer t' } });
      expect(r.json<Json>().agent).toMatchObject({ pid: process.pid, version: VERSION });
    } finally {
      await own.close();
    }
  });
});

describe('POST /v1/sync?wait=done', { timeout: 60_000 }, () => {
  let s: ApiStack;
  let dir: DirectorySource;
  const sync = async (query = '') => {
    const r = await inject(s.server, { method: 'POST', url: `/v1/sync${query}`, headers: s.auth() });
    return { status: r.statusCode, body: r.json<Json>() };
  };
  const follow = () => s.agent.onSync(() => dir.syncNow());

  beforeAll(async () => {
    s = await apiStack({ components: () => [sleeper('db'), sleeper('api', [{ component: 'db', type: 'hard' }])] });
    // The development source as the agent command wires it, without a watcher: only a sync makes it look. Its first
    // look offers the content the stack already runs.
    dir = new DirectorySource(s.fx.dir, { onRevision: (r) => s.agent.offer(r) });
    follow();
    await dir.syncNow();
    await s.agent.idle();
  });
  afterEach(() => follow());
  afterAll(async () => {
    await dir?.close();
    await s?.close();
  });

  it('nothing new: unchanged, naming what runs', async () => {
    const applied = s.agent.store.appliedRevision()!.id;
    expect(await sync('?wait=done')).toEqual({
      status: 200,
      body: {
        sync: 'done',
        outcome: 'unchanged',
        revision: applied,
        summary: 'nothing new: the device runs the newest revision of its source',
        code: null,
        applied,
        rollout: [],
        appliedOutcome: 'success',
      },
    });
  });

  it('a change: answered once it is applied', async () => {
    const before = s.livePids();
    s.fx.bumpVersion('api', '1.1.0');
    const id = await s.fx.revisionId();
    const r = await sync('?wait=done&timeout=30s');
    expect(r).toEqual({
      status: 200,
      body: {
        sync: 'done',
        outcome: 'applied',
        revision: id,
        summary: '1 started, 1 stopped, 1 untouched',
        code: null,
        applied: id,
        rollout: [],
        appliedOutcome: 'success',
      },
    });
    expect(s.livePids().api).not.toBe(before.api);
    expect(s.livePids().db).toBe(before.db);
  });

  it('an invalid change: rejected, with its code; the device keeps what it runs', async () => {
    const applied = s.agent.store.appliedRevision()!.id;
    s.fx.edit(s.fx.recipePath('api'), 'restart_policy', 'restart_polcy');
    const id = await s.fx.revisionId();
    const r = await sync('?wait=done');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ outcome: 'rejected', revision: id, code: 'KS_UNKNOWN_KEY', applied });
    expect(r.body.summary).toMatch(/^invalid: 1 error\(s\), first: recipes\/api\.toml:/);
    expect((await s.get('/v1/revision')).json<Json>().rejected).toMatchObject({ revision: id, code: 'KS_UNKNOWN_KEY' });
    s.fx.edit(s.fx.recipePath('api'), 'restart_polcy', 'restart_policy');
    expect((await sync('?wait=done')).body).toMatchObject({ outcome: 'applied' });
    expect((await s.get('/v1/revision')).json<Json>().rejected).toBeNull();
  });

  it('a look that fails: 502 KS_SYNC_FAILED with why', async () => {
    s.agent.onSync(async () => {
      throw new Error('the Git server is down');
    });
    expect(await sync('?wait=done')).toEqual({
      status: 502,
      body: {
        error: {
          code: 'KS_SYNC_FAILED',
          message: 'looking at the source failed: the Git server is down; the device keeps what it runs',
        },
      },
    });
  });

  it('a look that outlives the timeout: 504, and it carries on', async () => {
    let release!: () => void;
    let looked = false;
    s.agent.onSync(
      () =>
        new Promise<void>((resolve) => {
          release = () => {
            looked = true;
            resolve();
          };
        }),
    );
    const r = await sync('?wait=done&timeout=200ms');
    expect(r).toEqual({
      status: 504,
      body: {
        error: {
          code: 'KS_WAIT_TIMEOUT',
          message: 'the look and what it found did not finish within 200ms; they go on in the agent',
        },
        timeout: '200ms',
      },
    });
    release();
    // The next look (the directory again) begins only after that one ended.
    follow();
    await s.agent.syncSettled();
    expect(looked).toBe(true);
  });

  it('bad values are 400 (nothing is looked at); without wait it is the 202 of old', async () => {
    expect((await sync('?wait=health')).body).toEqual({
      error: { code: 'KS_BAD_QUERY', message: 'wait must be done or none, not "health"' },
    });
    expect((await sync('?wait=done&timeout=soon')).status).toBe(400);
    expect((await sync('?dry=true')).status).toBe(400);
    expect(await sync()).toEqual({ status: 202, body: { sync: 'requested' } });
    expect(await sync('?wait=none')).toEqual({ status: 202, body: { sync: 'requested' } });
  });

  it('a cookie that is no session leaves the open routes open', async () => {
    const r = await inject(s.server, { method: 'GET', url: '/healthz', cookies: { session: 'abc' } });
    expect(r.statusCode).toBe(200);
  });
});
