// `keystonectl apply PLAN` and POST /v1/apply against a running in-process agent with real processes: the files go over
// real HTTP on loopback, the agent verifies and applies them through its own loop, and the progress streams back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { runCtl } from '../support/cli-run.js';
import { freePorts, neverHealthy } from '../support/stack-fixture.js';
import { apiStack, until, type ApiStack } from './api-stack.js';

type Json = Record<string, unknown>;
const ndjson = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Json);

describe('keystonectl apply against an agent that follows a directory', { timeout: 90_000 }, () => {
  let s: ApiStack;
  let agentArgs: string[];

  beforeAll(async () => {
    s = await apiStack();
    const l = await s.listen();
    agentArgs = ['--agent', `http://127.0.0.1:${l.port}`, '--token', s.token];
  });
  afterAll(async () => {
    await s?.close();
  });

  const ctl = (...args: string[]) => runCtl([...args, ...agentArgs], s.fx.dir);

  it('applies a bumped api: restarts api and web, follows the progress, exits 0 once converged', async () => {
    const before = s.livePids();
    const historyBefore = s.agent.store.history({ limit: 100 }).length;
    s.fx.bumpVersion('api', '1.5.0');
    const r = await ctl('apply', s.fx.plan, '--allow-unsigned');
    expect(r.stderr).toContain('UNSIGNED');
    expect(r.code).toBe(0);
    // Plain lines (not a terminal), in the order things happened.
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      /^\[apply\] revision=manual:[0-9a-f]{12} plan=plans\/stack\.toml msg=accepted by the agent$/,
    );
    expect(lines[1]).toBe(
      '[agent] reconcile plan stop_order=[web api] start_order=[api web] no_touch=[influxdb telemetry]',
    );
    expect(lines).toContain('[supervisor] component=api state=running');
    expect(lines.indexOf('[supervisor] component=api state=running')).toBeLessThan(
      lines.indexOf('[supervisor] component=web state=starting'),
    );
    expect(lines.at(-1)).toBe('[apply] outcome=success converged=true msg=2 started, 2 stopped, 2 untouched');

    const after = s.livePids();
    expect(after.influxdb).toBe(before.influxdb);
    expect(after.telemetry).toBe(before.telemetry);
    expect(after.api).not.toBe(before.api);
    expect(after.web).not.toBe(before.web);
    expect(s.agent.store.component('api')?.version).toBe('1.5.0');
    const applied = s.agent.store.appliedRevision()!;
    expect(applied.id).toMatch(/^manual:[0-9a-f]{12}$/);
    expect(applied.planFile).toBe(s.fx.plan);
    // SPEC §11 (issue 5): every log line about a component carries its name and revision.
    const untagged = s.lines.filter((l) => typeof l.component === 'string' && typeof l.revision !== 'string');
    expect(untagged).toEqual([]);
    const history = s.agent.store.history({ limit: 100 });
    expect(history.length).toBe(historyBefore + 1);
    expect(history[0]).toMatchObject({ revision: applied.id, outcome: 'success' });
  });

  it('--json prints one document: the revision, its reconcile, the outcome and every component', async () => {
    const r = await ctl('apply', s.fx.plan, '--allow-unsigned', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as Json;
    expect(doc).toMatchObject({
      planFile: s.fx.plan,
      suspendedSync: false,
      outcome: 'success',
      converged: true,
      reconcile: { stopOrder: [], startOrder: [], noTouch: ['influxdb', 'api', 'telemetry', 'web'] },
    });
    expect((doc.components as Json[]).map((c) => [c.name, c.state])).toEqual([
      ['influxdb', 'running'],
      ['api', 'running'],
      ['telemetry', 'running'],
      ['web', 'running'],
    ]);
    expect(doc.event).toBeUndefined();
  });

  it('a plan that is invalid here is reported with file and line (exit 2) and never reaches the agent', async () => {
    const historyBefore = s.agent.store.history({ limit: 100 }).length;
    s.fx.edit(s.fx.recipePath('web'), /version = "1\.27\.0"/, 'version = "not-a-version"');
    try {
      const r = await ctl('apply', s.fx.plan, '--allow-unsigned');
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/recipes\/web\.toml:\d+/);
      expect(r.stdout).toBe('');
      expect(s.agent.store.history({ limit: 100 }).length).toBe(historyBefore);
    } finally {
      s.fx.edit(s.fx.recipePath('web'), 'version = "not-a-version"', 'version = "1.27.0"');
    }
  });

  it('an apply that fails exits 1 with the failure, and the neighbours keep running', async () => {
    const [closed] = await freePorts(1);
    const before = s.livePids();
    s.fx.add(neverHealthy('broken', closed!));
    try {
      const r = await ctl('apply', s.fx.plan, '--allow-unsigned');
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/\[apply\] outcome=failure converged=false msg=failed: broken/);
      expect(r.stderr).toMatch(/keystonectl apply: failure: failed: broken/);
      expect(s.livePids()).toMatchObject(before);
    } finally {
      s.fx.remove('broken');
    }
    const r = await ctl('apply', s.fx.plan, '--allow-unsigned');
    expect(r.code).toBe(0);
    expect(s.agent.store.component('broken')).toBeUndefined();
  });

  it('the agent verifies what it is sent: a revision it cannot load is rejected in the stream, nothing restarted', async () => {
    const before = s.livePids();
    const plan = `[[components]]\nname = "ghost"\nrecipe = "recipes/ghost.toml"\n`;
    const res = await inject(s.server, {
      method: 'POST',
      url: '/v1/apply',
      headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
      payload: { plan: 'plans/ghost.toml', files: { 'plans/ghost.toml': Buffer.from(plan).toString('base64') } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const events = ndjson(res.body);
    expect(events.map((e) => e.event)).toEqual(['accepted', 'done']);
    expect(events[1]).toMatchObject({ outcome: 'rejected', converged: false });
    expect(String(events[1]!.summary)).toMatch(/recipes\/ghost\.toml/);
    expect(s.livePids()).toEqual(before);
  });

  it('streams image pull progress reported while the apply runs', async () => {
    const pull = { component: 'web', image: 'acme/web:1', status: 'Downloading', currentBytes: 1024, totalBytes: 4096 };
    // After the route's own listener has seen the apply begin (listeners run in order; this one was added first).
    s.agent.events.once('applying', () => queueMicrotask(() => s.agent.events.emit('pull', pull)));
    const files = Object.fromEntries(
      ['plans/stack.toml', ...['influxdb', 'api', 'telemetry', 'web'].map((n) => s.fx.recipePath(n))].map((f) => [
        f,
        readFileSync(join(s.fx.dir, f)).toString('base64'),
      ]),
    );
    const res = await inject(s.server, {
      method: 'POST',
      url: '/v1/apply',
      headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
      payload: { plan: s.fx.plan, files },
    });
    const events = ndjson(res.body);
    expect(events.map((e) => e.event)).toEqual(['accepted', 'reconcile', 'pull', 'done']);
    expect(events[2]).toEqual({ event: 'pull', ...pull });
  });

  it('refuses bad requests before anything is applied', async () => {
    const historyBefore = s.agent.store.history({ limit: 100 }).length;
    const send = (payload: unknown, headers: Record<string, string> = { authorization: `Bearer ${s.token}` }) =>
      inject(s.server, {
        method: 'POST',
        url: '/v1/apply',
        headers: { 'content-type': 'application/json', ...headers },
        payload: payload as Json,
      });
    const b64 = (t: string) => Buffer.from(t).toString('base64');
    const noToken = await send({ plan: 'plans/a.toml', files: { 'plans/a.toml': b64('') } }, {});
    expect(noToken.statusCode).toBe(401);
    const escape = await send({ plan: 'plans/a.toml', files: { 'plans/a.toml': b64(''), '../etc/passwd': b64('x') } });
    expect(escape.statusCode).toBe(400);
    expect(escape.json()).toMatchObject({ error: { code: 'KS_BAD_BODY' } });
    const absolute = await send({ plan: '/etc/plan.toml', files: { '/etc/plan.toml': b64('') } });
    expect(absolute.statusCode).toBe(400);
    const missingPlan = await send({ plan: 'plans/a.toml', files: {} });
    expect(missingPlan.json()).toMatchObject({
      error: { code: 'KS_BAD_BODY', message: expect.stringContaining('plans/a.toml') },
    });
    const notBase64 = await send({ plan: 'plans/a.toml', files: { 'plans/a.toml': '%%%' } });
    expect(notBase64.statusCode).toBe(400);
    const extraKey = await send({ plan: 'plans/a.toml', files: { 'plans/a.toml': b64('') }, run: 'rm -rf /' });
    expect(extraKey.statusCode).toBe(400);
    const badWait = await inject(s.server, {
      method: 'POST',
      url: '/v1/apply?wait=forever',
      headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
      payload: {},
    });
    expect(badWait.statusCode).toBe(400);
    expect(s.agent.store.history({ limit: 100 }).length).toBe(historyBefore);
  });

  it('resume on an agent that follows a directory has nothing to resume', async () => {
    const r = await ctl('resume');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/not suspended/);
  });
});

describe('keystonectl apply against an agent that follows Git', { timeout: 90_000 }, () => {
  let s: ApiStack;
  let agentArgs: string[];

  beforeAll(async () => {
    s = await apiStack({ following: 'git' });
    const l = await s.listen();
    agentArgs = ['--agent', `http://127.0.0.1:${l.port}`, '--token', s.token];
  });
  afterAll(async () => {
    await s?.close();
  });

  const ctl = (...args: string[]) => runCtl([...args, ...agentArgs], s.fx.dir);

  it('refuses a manual apply and says to push a commit instead (409), touching nothing', async () => {
    const before = s.livePids();
    s.fx.bumpVersion('web', '1.28.0');
    const r = await ctl('apply', s.fx.plan, '--allow-unsigned');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/follows Git: push a commit to deploy instead.*--force/);
    expect(r.stderr).toContain('[KS_FOLLOWING_GIT]');
    expect(s.livePids()).toEqual(before);
    expect(s.agent.syncState().suspended).toBeUndefined();
  });

  it('--force applies it and suspends the Git sync, which holds new commits until resume', async () => {
    const r = await ctl('apply', s.fx.plan, '--allow-unsigned', '--force');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/the Git sync is suspended until `keystonectl resume`/);
    expect(s.agent.store.component('web')?.version).toBe('1.28.0');
    const manual = s.agent.store.appliedRevision()!.id;
    const rev = (await s.get('/v1/revision')).json<Json>();
    expect(rev.sync).toMatchObject({
      following: 'git',
      suspended: { revision: manual, reason: 'a forced manual apply' },
      held: null,
    });

    // A new "commit" from the source: held, not applied.
    s.fx.bumpVersion('web', '1.29.0');
    const offered = await s.fx.revisionId();
    s.agent.offer({ id: offered, origin: 'directory', source: 'test source', reader: new DirectoryReader(s.fx.dir) });
    await s.agent.idle();
    expect(s.agent.store.appliedRevision()!.id).toBe(manual);
    expect(s.agent.syncState().held).toBe(offered);
    const status = await ctl('status');
    expect(status.stdout).toMatch(/Git sync suspended/);

    const resumed = await ctl('resume');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(`applying ${offered}`);
    await until(() => s.agent.store.appliedRevision()?.id === offered, 'the held revision to be applied');
    await s.agent.idle();
    expect(s.agent.store.component('web')?.version).toBe('1.29.0');
    expect(s.agent.syncState()).toEqual({ following: 'git' });
  });
});
