// POST /v1/webhooks/github (SPEC §7, §10): authenticated by GitHub's HMAC over the raw body instead of the bearer
// token, exempt from the Host check (GitHub comes through the device's public name) but not from the Origin check.
// The server is the real one from buildServer; the agent is a small fake whose sync() counts, since all the route may
// do to an agent is ask it to look.
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import type { AgentEventMap } from '../../src/agent/agent.js';
import type { ApiAgent, ApiDeps } from '../../src/api/api-deps.js';
import { buildServer } from '../../src/api/build-server.js';
import {
  checkGithubSignature,
  fullRef,
  GITHUB_WEBHOOK_BODY_LIMIT,
  githubSignature,
  githubWebhookAction,
} from '../../src/api/github-webhook.js';
import { listenApi, type ApiListeners } from '../../src/api/listen-api.js';
import { rawRequest } from './http-request.js';

const SECRET = 'webhook-secret-for-tests';
const TOKEN = 'f'.repeat(64);
const URL_ = '/v1/webhooks/github';

/** An agent with nothing running whose only action is sync(), counted. */
function fakeAgent(canSync = true): ApiAgent & { syncs: number } {
  const unused = (): never => {
    throw new Error('not used by the webhook');
  };
  const agent = {
    syncs: 0,
    store: {
      components: () => [],
      component: () => undefined,
      appliedRevision: () => undefined,
      history: () => [],
      historyOf: () => [],
    },
    engine: {
      restartOrders: () => undefined,
      restart: unused,
      stop: unused,
      start: unused,
      pidOf: () => undefined,
      unitsOf: () => undefined,
    },
    events: new EventEmitter<AgentEventMap>(),
    applyManual: unused,
    resume: unused,
    syncState: () => ({ following: 'git' as const }),
    sync() {
      if (!canSync) return false;
      agent.syncs++;
      return true;
    },
  };
  return agent;
}

function server(opts: { webhook?: ApiDeps['webhook'] | null; canSync?: boolean } = {}) {
  const agent = fakeAgent(opts.canSync);
  const webhook = opts.webhook === null ? undefined : (opts.webhook ?? { secret: SECRET, ref: 'main' });
  const app = buildServer({ agent, token: TOKEN, ...(webhook && { webhook }) });
  return { agent, app };
}

const push = (ref: string, after = 'a'.repeat(40), extra: Record<string, unknown> = {}) =>
  JSON.stringify({ ref, before: '0'.repeat(40), after, ...extra });

/** A delivery as GitHub sends it: event, delivery id, JSON, signed with `secret` (or a given header). */
function delivery(
  event: string,
  body: string,
  o: { secret?: string; signature?: string | null; headers?: Record<string, string>; contentType?: string } = {},
) {
  const sig = o.signature === undefined ? githubSignature(o.secret ?? SECRET, body) : o.signature;
  return {
    method: 'POST' as const,
    url: URL_,
    payload: body,
    headers: {
      'content-type': o.contentType ?? 'application/json',
      'x-github-event': event,
      'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      'user-agent': 'GitHub-Hookshot/044aadd',
      ...(sig !== null && { 'x-hub-signature-256': sig }),
      ...o.headers,
    },
  };
}

type Json = Record<string, unknown>;
const codeOf = (body: string) => (JSON.parse(body) as { error: { code: string } }).error.code;

let toClose: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const c of toClose) await c.close();
  toClose = [];
});
function tracked<T extends { close(): Promise<unknown> }>(x: T): T {
  toClose.push(x);
  return x;
}

describe('the signature (pure)', () => {
  it("matches GitHub's documented example", () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const want = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(githubSignature("It's a Secret to Everybody", 'Hello, World!')).toBe(want);
    expect(checkGithubSignature(want, "It's a Secret to Everybody", Buffer.from('Hello, World!'))).toBe('ok');
    expect(
      checkGithubSignature(
        want.toUpperCase().replace('SHA256=', 'sha256='),
        "It's a Secret to Everybody",
        Buffer.from('Hello, World!'),
      ),
    ).toBe('ok');
  });

  it('refuses another body, another secret, a truncated or malformed header, and says when none was sent', () => {
    const body = Buffer.from('Hello, World!');
    const good = githubSignature('s', body);
    expect(checkGithubSignature(good, 's', Buffer.from('Hello, World?'))).toBe('invalid');
    expect(checkGithubSignature(good, 't', body)).toBe('invalid');
    for (const h of [
      good.slice(0, -2),
      good + '00',
      good.replace('sha256=', 'sha1='),
      good.slice(7),
      `sha256=${'z'.repeat(64)}`,
      'sha256=',
    ])
      expect(checkGithubSignature(h, 's', body), h).toBe('invalid');
    expect(checkGithubSignature(undefined, 's', body)).toBe('missing');
    expect(checkGithubSignature('', 's', body)).toBe('missing');
  });

  it('only a push to the followed ref syncs; a short ref means a branch', () => {
    const b = (s: string) => Buffer.from(s);
    expect(fullRef('main')).toBe('refs/heads/main');
    expect(fullRef('refs/tags/v1')).toBe('refs/tags/v1');
    expect(githubWebhookAction('push', b(push('refs/heads/main', 'c'.repeat(40))), 'application/json', 'main')).toEqual(
      { kind: 'sync', ref: 'refs/heads/main', after: 'c'.repeat(40) },
    );
    expect(githubWebhookAction('push', b(push('refs/heads/main')), 'application/json', 'refs/heads/main').kind).toBe(
      'sync',
    );
    expect(githubWebhookAction('push', b(push('refs/heads/mainline')), 'application/json', 'main')).toMatchObject({
      kind: 'ignored',
      reason: 'other ref',
    });
    expect(githubWebhookAction('push', b(push('refs/tags/main')), 'application/json', 'main')).toMatchObject({
      kind: 'ignored',
      reason: 'other ref',
    });
    expect(githubWebhookAction('issues', b('{}'), 'application/json', 'main')).toMatchObject({
      kind: 'ignored',
      reason: 'other event',
    });
    expect(githubWebhookAction('push', b('{"ref":1}'), 'application/json', 'main')).toMatchObject({
      kind: 'bad-payload',
      code: 'KS_BAD_BODY',
    });
    expect(githubWebhookAction('push', b('{'), 'application/json', 'main')).toMatchObject({
      kind: 'bad-payload',
      code: 'KS_BAD_JSON',
    });
    expect(githubWebhookAction(undefined, b('{}'), 'application/json', 'main')).toMatchObject({
      kind: 'bad-payload',
      code: 'KS_BAD_REQUEST',
    });
  });
});

describe('POST /v1/webhooks/github', () => {
  it('a signed push to the followed branch syncs once: 202 with the ref and the new commit', async () => {
    const { agent, app } = server();
    tracked(app);
    const after = '0123456789abcdef0123456789abcdef01234567';
    const r = await inject(app, delivery('push', push('refs/heads/main', after)));
    expect(r.statusCode).toBe(202);
    expect(r.json<Json>()).toEqual({ sync: 'requested', ref: 'refs/heads/main', after });
    expect(agent.syncs).toBe(1);
  });

  it('without a bearer token, which GitHub cannot send (and a wrong one does not matter either)', async () => {
    const { agent, app } = server();
    tracked(app);
    const r = await inject(
      app,
      delivery('push', push('refs/heads/main'), { headers: { authorization: 'Bearer nonsense' } }),
    );
    expect(r.statusCode).toBe(202);
    expect(agent.syncs).toBe(1);
  });

  it('a missing, malformed or wrong signature is 401 KS_WEBHOOK_SIGNATURE and syncs nothing', async () => {
    const { agent, app } = server();
    tracked(app);
    const body = push('refs/heads/main');
    const cases: Array<[string, ReturnType<typeof delivery>]> = [
      ['missing', delivery('push', body, { signature: null })],
      ['garbage', delivery('push', body, { signature: 'sha256=nope' })],
      ['sha1 only', delivery('push', body, { signature: 'sha1=' + 'a'.repeat(40) })],
      ['wrong secret', delivery('push', body, { secret: 'not-the-secret' })],
      [
        'over a different body',
        { ...delivery('push', body, { signature: githubSignature(SECRET, push('refs/heads/other')) }) },
      ],
      [
        'our bearer token instead',
        delivery('push', body, { signature: null, headers: { authorization: `Bearer ${TOKEN}` } }),
      ],
    ];
    for (const [what, req] of cases) {
      const r = await inject(app, req);
      expect(r.statusCode, what).toBe(401);
      expect(codeOf(r.body), what).toBe('KS_WEBHOOK_SIGNATURE');
    }
    // The body is checked byte for byte: the same JSON re-serialised (one space more) no longer matches.
    const spaced = body.replace('{', '{ ');
    const r = await inject(app, { ...delivery('push', body), payload: spaced });
    expect(JSON.parse(spaced)).toEqual(JSON.parse(body));
    expect(r.statusCode).toBe(401);
    expect(agent.syncs).toBe(0);
  });

  it('a push to another branch or a tag is accepted and ignored', async () => {
    const { agent, app } = server();
    tracked(app);
    for (const ref of ['refs/heads/feature', 'refs/heads/main-old', 'refs/tags/main']) {
      const r = await inject(app, delivery('push', push(ref)));
      expect(r.statusCode, ref).toBe(202);
      expect(r.json<Json>(), ref).toEqual({ ignored: 'other ref', event: 'push', ref });
    }
    const other = await inject(app, delivery('pull_request', JSON.stringify({ action: 'opened' })));
    expect(other.statusCode).toBe(202);
    expect(other.json<Json>()).toEqual({ ignored: 'other event', event: 'pull_request' });
    expect(agent.syncs).toBe(0);
  });

  it('follows the configured ref, short or full', async () => {
    const { agent, app } = server({ webhook: { secret: SECRET, ref: 'refs/heads/release' } });
    tracked(app);
    expect((await inject(app, delivery('push', push('refs/heads/main')))).json<Json>()).toMatchObject({
      ignored: 'other ref',
    });
    expect((await inject(app, delivery('push', push('refs/heads/release')))).json<Json>()).toMatchObject({
      sync: 'requested',
      ref: 'refs/heads/release',
    });
    expect(agent.syncs).toBe(1);
  });

  it('ping answers 200 {pong} and syncs nothing', async () => {
    const { agent, app } = server();
    tracked(app);
    const r = await inject(app, delivery('ping', JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 })));
    expect(r.statusCode).toBe(200);
    expect(r.json<Json>()).toEqual({ pong: true });
    expect(agent.syncs).toBe(0);
  });

  it("GitHub's form-encoded deliveries work too, signed over the encoded body", async () => {
    const { agent, app } = server();
    tracked(app);
    const form = new URLSearchParams({ payload: push('refs/heads/main') }).toString();
    const r = await inject(app, delivery('push', form, { contentType: 'application/x-www-form-urlencoded' }));
    expect(r.statusCode).toBe(202);
    expect(agent.syncs).toBe(1);
  });

  it('bad JSON or a push without its fields, validly signed, is 400; without an event name too', async () => {
    const { agent, app } = server();
    tracked(app);
    const bad = await inject(app, delivery('push', '{"ref": "refs/heads/main",'));
    expect(bad.statusCode).toBe(400);
    expect(codeOf(bad.body)).toBe('KS_BAD_JSON');
    const shape = await inject(app, delivery('push', JSON.stringify({ ref: 'refs/heads/main' })));
    expect(shape.statusCode).toBe(400);
    expect(codeOf(shape.body)).toBe('KS_BAD_BODY');
    const noEvent = delivery('push', push('refs/heads/main'));
    delete (noEvent.headers as Record<string, string>)['x-github-event'];
    expect((await inject(app, noEvent)).statusCode).toBe(400);
    expect(agent.syncs).toBe(0);
  });

  it('without a configured secret: 503 KS_WEBHOOK_DISABLED, whatever is sent', async () => {
    const { agent, app } = server({ webhook: null });
    tracked(app);
    // A signed delivery, and an empty POST with our bearer token: the route is there, webhooks are off.
    for (const req of [
      delivery('push', push('refs/heads/main')),
      { method: 'POST' as const, url: URL_, headers: { authorization: `Bearer ${TOKEN}` } },
    ]) {
      const r = await inject(app, req);
      expect(r.statusCode).toBe(503);
      expect(codeOf(r.body)).toBe('KS_WEBHOOK_DISABLED');
    }
    expect(agent.syncs).toBe(0);
  });

  it('an agent that cannot look on demand answers 503 KS_SYNC_UNAVAILABLE, as POST /v1/sync does', async () => {
    const { app } = server({ canSync: false });
    tracked(app);
    const r = await inject(app, delivery('push', push('refs/heads/main')));
    expect(r.statusCode).toBe(503);
    expect(codeOf(r.body)).toBe('KS_SYNC_UNAVAILABLE');
  });

  it('a foreign Origin is refused even with a valid signature (no browser has business here)', async () => {
    const { agent, app } = server();
    tracked(app);
    for (const headers of [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
    ] as Array<Record<string, string>>) {
      const r = await inject(app, delivery('push', push('refs/heads/main'), { headers }));
      expect(r.statusCode, JSON.stringify(headers)).toBe(403);
      expect(codeOf(r.body)).toBe('KS_FOREIGN_ORIGIN');
    }
    expect(agent.syncs).toBe(0);
  });

  it('a foreign Host is accepted on this route only; every other route still refuses it', async () => {
    const { agent, app } = server();
    tracked(app);
    const host = 'device-17.fleet.example.com';
    const r = await inject(app, delivery('push', push('refs/heads/main'), { headers: { host } }));
    expect(r.statusCode).toBe(202);
    expect(agent.syncs).toBe(1);
    // Not a way around the token or the Host check for its neighbours, or for other methods on the same path.
    const sync = await inject(app, {
      method: 'POST',
      url: '/v1/sync',
      headers: { host, authorization: `Bearer ${TOKEN}` },
    });
    expect(sync.statusCode).toBe(403);
    expect(codeOf(sync.body)).toBe('KS_FOREIGN_HOST');
    for (const [method, url] of [
      ['GET', URL_],
      ['GET', '/v1/components'],
      ['POST', '/v1/webhooks/github/'],
      ['POST', '/v1/webhooks/gitlab'],
    ] as const)
      expect((await inject(app, { method, url, headers: { host } })).statusCode, `${method} ${url}`).toBe(403);
    // And without the token, the other POSTs are still 401 on a loopback Host.
    expect((await inject(app, { method: 'POST', url: '/v1/sync' })).statusCode).toBe(401);
    expect(agent.syncs).toBe(1);
  });

  it('over a real connection with a foreign Host, as GitHub reaches a device through its public name', async () => {
    const { agent, app } = server();
    const listeners = tracked<ApiListeners>(await listenApi(app, { tcp: { host: '127.0.0.1', port: 0 } }));
    const d = delivery('push', push('refs/heads/main'), { headers: { host: 'hooks.example.net:443' } });
    const r = await rawRequest({
      port: listeners.port!,
      method: 'POST',
      path: URL_,
      headers: d.headers,
      body: d.payload,
    });
    expect(r.status).toBe(202);
    expect(agent.syncs).toBe(1);
  });

  it('takes push-sized bodies (above the API-wide 64 KiB) and refuses more than 1 MiB with 413', async () => {
    const { agent, app } = server();
    tracked(app);
    const commits = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ id: i.toString(16).padStart(40, '0'), message: 'x'.repeat(1000) }));
    const large = push('refs/heads/main', 'b'.repeat(40), { commits: commits(500) });
    expect(large.length).toBeGreaterThan(64 * 1024);
    expect(large.length).toBeLessThan(GITHUB_WEBHOOK_BODY_LIMIT);
    expect((await inject(app, delivery('push', large))).statusCode).toBe(202);
    const huge = push('refs/heads/main', 'b'.repeat(40), { commits: commits(1100) });
    expect(huge.length).toBeGreaterThan(GITHUB_WEBHOOK_BODY_LIMIT);
    const r = await inject(app, delivery('push', huge));
    expect(r.statusCode).toBe(413);
    expect(codeOf(r.body)).toBe('KS_BODY_TOO_LARGE');
    expect(agent.syncs).toBe(1);
  });

  it('other routes keep their JSON-only, 64 KiB bodies', async () => {
    const { app } = server();
    tracked(app);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const form = await inject(app, {
      method: 'POST',
      url: '/v1/sync',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'a=b',
    });
    expect(form.statusCode).toBe(415);
    const big = await inject(app, {
      method: 'POST',
      url: '/v1/sync',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify({ pad: 'x'.repeat(70 * 1024) }),
    });
    expect(big.statusCode).toBe(413);
    // The webhook itself takes only JSON or GitHub's form encoding.
    expect(
      (await inject(app, delivery('push', push('refs/heads/main'), { contentType: 'text/plain' }))).statusCode,
    ).toBe(415);
  });
});
