// Issue 18: GitHub's published example payloads (`@octokit/webhooks-examples`), signed with the configured secret and
// sent with their X-GitHub-Event, to the real API. What src/api/github-webhook.ts does with them:
//   - a push whose `ref` is the followed branch asks the agent to look (202 {sync: requested}), forced or not;
//   - a push to another branch or a tag, and the deletion of any branch, the followed one included (`deleted`, `after`
//     all zeros: nothing to fetch, a look would only fail), are answered 202 {ignored} and start no look;
//   - ping is answered 200 {pong}; every other event 202 {ignored: other event};
//   - a wrong signature is 401 KS_WEBHOOK_SIGNATURE, before the event is even read.
// First every example of every event against the API on a counting agent, then a live agent following a real Git
// server, which applies a pushed commit on delivery of the example push (its poll is 10 minutes) and makes no request
// to the server for anything else.
import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import type { AgentEventMap } from '../../src/agent/agent.js';
import type { ApiAgent } from '../../src/api/api-deps.js';
import { buildServer } from '../../src/api/build-server.js';
import {
  delivery,
  examplesOf,
  pushExample,
  webhookExamples,
  withCommits,
  type Payload,
} from '../support/github-webhook-examples.js';
import { startWebhookWorld, type WebhookWorld } from './webhook-world.js';

const SECRET = 'the-webhook-secret-of-issue-18';
const ZEROS = '0'.repeat(40);

/** An agent with nothing running whose only action is sync(), counted. */
function countingAgent(): ApiAgent & { syncs: number } {
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
    sync: () => (agent.syncs++, true),
  };
  return agent;
}

/** Delivers to an API following `ref`; the answer and how many looks it asked for. */
async function deliver(ref: string, event: string, payload: Payload, o: { signature?: string; form?: boolean } = {}) {
  const agent = countingAgent();
  const app = buildServer({ agent, token: 'f'.repeat(64), webhook: { secret: SECRET, ref } });
  try {
    const d = delivery(event, payload, { secret: SECRET, ...o });
    const r = await inject(app, { method: 'POST', url: '/v1/webhooks/github', headers: d.headers, payload: d.body });
    return { status: r.statusCode, json: r.json<Record<string, unknown>>(), syncs: agent.syncs };
  } finally {
    await app.close();
  }
}

// The examples push to `master` (a branch created), create and delete the tag `simple-tag`: published as they are,
// for an agent following master. Adjusted payloads say so where they are made.
const branchPush = pushExample((p) => p.ref === 'refs/heads/master');
const tagPush = pushExample((p) => p.ref === 'refs/tags/simple-tag' && p.created === true);
const tagDeletion = pushExample((p) => p.ref === 'refs/tags/simple-tag' && p.deleted === true);

describe('every published example, to the API of an agent following master', () => {
  it('a push to the followed branch asks for a look: 202 with the ref and the new commit', async () => {
    expect(await deliver('master', 'push', branchPush)).toEqual({
      status: 202,
      syncs: 1,
      json: { sync: 'requested', ref: 'refs/heads/master', after: branchPush.after },
    });
    expect(
      (await deliver('refs/heads/master', 'push', branchPush, { form: true })).syncs,
      'form-encoded, a full ref',
    ).toBe(1);
  });

  it('a forced push to the followed branch too (adjusted: forced set, as GitHub sends a non-fast-forward push)', async () => {
    expect(
      await deliver('master', 'push', { ...branchPush, forced: true, created: false, before: 'a'.repeat(40) }),
    ).toMatchObject({ status: 202, syncs: 1 });
  });

  it('a push to another branch, a tag push, a tag deletion: 202, ignored, no look', async () => {
    expect(await deliver('main', 'push', branchPush)).toEqual({
      status: 202,
      syncs: 0,
      json: { ignored: 'other ref', event: 'push', ref: 'refs/heads/master' },
    });
    for (const p of examplesOf('push').filter((x) => String(x.ref).startsWith('refs/tags/')))
      expect(await deliver('master', 'push', p), `${String(p.ref)} deleted=${String(p.deleted)}`).toEqual({
        status: 202,
        syncs: 0,
        json: { ignored: 'other ref', event: 'push', ref: p.ref },
      });
  });

  it("a deletion of the followed branch (adjusted: the tag deletion's ref made refs/heads/master): 202, ignored, no look", async () => {
    const deletion = { ...tagDeletion, ref: 'refs/heads/master' };
    expect(deletion).toMatchObject({ deleted: true, after: ZEROS });
    expect(await deliver('master', 'push', deletion)).toEqual({
      status: 202,
      syncs: 0,
      json: { ignored: 'branch deleted', event: 'push', ref: 'refs/heads/master' },
    });
    // Another branch's deletion is simply another ref.
    expect(await deliver('master', 'push', { ...tagDeletion, ref: 'refs/heads/feature' })).toMatchObject({
      status: 202,
      syncs: 0,
      json: { ignored: 'other ref' },
    });
  });

  it('ping, from a repository or an organization hook, on github.com and every GHES release: 200 pong, no look', async () => {
    const hosts = ['api.github.com', 'ghes-31', 'ghes-32', 'ghes-33', 'ghes-34', 'ghes-35'] as const;
    const pings = hosts.flatMap((h) => webhookExamples(h).get('ping') ?? []);
    expect(pings.length).toBeGreaterThanOrEqual(8);
    for (const p of pings)
      expect(await deliver('master', 'ping', p)).toEqual({ status: 200, syncs: 0, json: { pong: true } });
  });

  it('every example of every other event (pull_request, issues, check_run, status…): 202 ignored, no look', async () => {
    let n = 0;
    for (const [event, list] of webhookExamples()) {
      if (event === 'push' || event === 'ping') continue;
      for (const p of list) {
        expect(await deliver('master', event, p), event).toEqual({
          status: 202,
          syncs: 0,
          json: { ignored: 'other event', event },
        });
        n++;
      }
    }
    for (const event of ['pull_request', 'issues', 'check_run', 'status'])
      expect(examplesOf(event).length, event).toBeGreaterThan(0);
    expect(n).toBeGreaterThan(300);
  });

  it('a wrong signature is refused (401) whatever the event, and asks for nothing', async () => {
    for (const [event, p] of [
      ['push', branchPush],
      ['ping', examplesOf('ping')[0]!],
      ['issues', examplesOf('issues')[0]!],
    ] as const) {
      const wrong = delivery(event, p, { secret: 'not-the-secret' }).headers['x-hub-signature-256']!;
      const r = await deliver('master', event, p, { signature: wrong });
      expect(r, event).toMatchObject({ status: 401, syncs: 0, json: { error: { code: 'KS_WEBHOOK_SIGNATURE' } } });
    }
  });
});

describe(
  'a live agent following a real Git server (poll 10 minutes: only a delivery makes it look)',
  { timeout: 90_000 },
  () => {
    let w: WebhookWorld;
    beforeAll(async () => {
      w = await startWebhookWorld(SECRET);
    }, 60_000);
    afterAll(async () => {
      await w?.close();
    }, 30_000);

    // The example push adjusted to this repository: ref made refs/heads/main, before/after and the commit ids made the
    // real commits; everything else (repository, pusher, sender, the commit's message and author) as published.
    const pushOf = (before: string, after: string, extra: Payload = {}) =>
      withCommits({ ...branchPush, ref: 'refs/heads/main', ...extra }, before, after);

    it('a push to the followed branch: the example push is delivered and the agent applies the commit at once', async () => {
      const before = w.applied();
      const mark = w.agent.mark();
      const next = await w.pushVersion('1.0.1');
      const r = await w.deliver('push', pushOf(before, next));
      expect(r).toEqual({ status: 202, json: { sync: 'requested', ref: 'refs/heads/main', after: next } });
      await w.appliedOk(next, mark, 30_000);
    });

    it('a wrong signature is refused (401) and the agent does not look', async () => {
      const requests = w.gitServer.requests.length;
      const next = await w.pushVersion('1.0.2');
      const r = await w.deliver('push', pushOf(w.applied(), next), { signature: `sha256=${'0'.repeat(64)}` });
      expect(r.status).toBe(401);
      await w.expectNoLook(requests);
    });

    it('everything else is answered and ignored: no request reaches the Git server, the pushed commit waits', async () => {
      const requests = w.gitServer.requests.length;
      const pending = w.lastPushed();
      const answers = [
        await w.deliver('push', branchPush), // to master, as published: another branch here
        await w.deliver('push', tagPush),
        await w.deliver('push', tagDeletion),
        await w.deliver('push', { ...tagDeletion, ref: 'refs/heads/main' }), // adjusted: the followed branch deleted
        ...(await Promise.all(
          ['ping', 'pull_request', 'issues', 'check_run', 'status'].map((e) => w.deliver(e, examplesOf(e)[0]!)),
        )),
      ];
      for (const a of answers) expect([200, 202], JSON.stringify(a)).toContain(a.status);
      expect(answers.map((a) => a.json.ignored ?? (a.json.pong ? 'pong' : a.json))).toEqual([
        'other ref',
        'other ref',
        'other ref',
        'branch deleted',
        'pong',
        'other event',
        'other event',
        'other event',
        'other event',
      ]);
      await w.expectNoLook(requests);
      expect(w.applied()).not.toBe(pending);
      // The push that was held back all along, delivered now: it was the deliveries above that did nothing.
      const mark = w.agent.mark();
      expect((await w.deliver('push', pushOf(w.applied(), pending))).status).toBe(202);
      await w.appliedOk(pending, mark, 30_000);
    });

    it('a forced push to the followed branch makes the agent look (and refuse the rewrite, KS_HISTORY_REWRITE)', async () => {
      const kept = w.applied();
      const mark = w.agent.mark();
      const rewritten = await w.forcePushSibling('1.0.3');
      expect((await w.deliver('push', pushOf(kept, rewritten, { forced: true }))).json).toMatchObject({
        sync: 'requested',
      });
      const refusal = await w.agent.waitForLog(
        (l) => l.revision === rewritten && l.msg === 'commit refused; still running the previous one',
        30_000,
        mark,
        'the refusal',
      );
      expect(refusal.code).toBe('KS_HISTORY_REWRITE');
      expect(w.applied()).toBe(kept);
    });
  },
);
