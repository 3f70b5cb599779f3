// A live agent for the webhook's end-to-end cases: the real agent (`keystone agent --repo URL`) following `main` of a
// repository on the real Git server (git http-backend), polling every 10 minutes so that only a delivery makes it
// look, with its HTTP API on a loopback port and a webhook secret. No commit statuses: the Git server's request log
// is then the source's alone, and says whether a delivery made the agent look.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { delivery, type Payload } from '../support/github-webhook-examples.js';
import { freePorts, sleeper, stackFixture } from '../support/stack-fixture.js';

export interface WebhookWorld {
  agent: AgentProcess;
  gitServer: GitHttpServer;
  /** The store's applied revision. */
  applied(): string;
  /** The last commit pushed. */
  lastPushed(): string;
  /** Bumps app's version, commits on the last pushed commit and pushes it to main; returns the commit id. */
  pushVersion(version: string): Promise<string>;
  /** Bumps app's version in a commit on the parent of the applied commit and force-pushes it: a rewritten main. */
  forcePushSibling(version: string): Promise<string>;
  /** POSTs the delivery to the agent's webhook; its status and JSON answer. */
  deliver(
    event: string,
    payload: Payload,
    o?: { signature?: string },
  ): Promise<{ status: number; json: Record<string, unknown> }>;
  /** After one more round trip through the agent's API, no request of a look (upload-pack) reached the Git server since `from`; pushes may. */
  expectNoLook(from: number): Promise<void>;
  appliedOk(commit: string, mark: number, deadlineMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookWorld(secret: string): Promise<WebhookWorld> {
  const root = mkdtempSync(join(tmpdir(), 'keystone-webhook-'));
  const cleanups: Array<() => unknown> = [() => rmSync(root, { recursive: true, force: true })];
  const close = async () => {
    for (const c of cleanups.reverse()) await c();
  };
  try {
    const gitServer = await startGitHttpServer({ root: join(root, 'srv') });
    cleanups.push(() => gitServer.stop());
    gitServer.createRepository('fleet');
    const url = gitServer.url('fleet');
    const fx = await stackFixture({ signed: false, components: () => [sleeper('app')] });
    cleanups.push(() => fx.cleanup());
    const h = new AgentHarness();
    cleanups.push(() => h.cleanup());
    const git = (...args: string[]) => gitIn(fx.dir, args);
    await git('init', '--quiet', '--initial-branch=main');
    let pushed = '';
    const commitAndPush = async (version: string, force = false) => {
      fx.bumpVersion('app', version);
      await git('add', '-A');
      await git('commit', '--quiet', '-m', `app ${version}`);
      await git('push', '--quiet', ...(force ? ['--force'] : []), url, 'HEAD:refs/heads/main');
      return (pushed = await git('rev-parse', 'HEAD'));
    };
    const first = await commitAndPush('1.0.0');
    const secretFile = join(root, 'webhook-secret');
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    const [port] = (await freePorts(1)) as [number];
    const agent = h.start({
      repo: url,
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: [
        '--ref',
        'main',
        '--poll',
        '10m',
        '--status',
        'none',
        '--webhook-secret-file',
        secretFile,
        '--listen',
        `127.0.0.1:${port}`,
      ],
    });
    const api = `http://127.0.0.1:${port}`;
    const world: WebhookWorld = {
      agent,
      gitServer,
      applied: () => h.appliedRevision()?.id ?? '',
      lastPushed: () => pushed,
      pushVersion: (version) => commitAndPush(version),
      async forcePushSibling(version) {
        await git('reset', '--quiet', '--soft', `${world.applied()}~1`);
        return commitAndPush(version, true);
      },
      async deliver(event, payload, o = {}) {
        const d = delivery(event, payload, { secret, ...o });
        const res = await fetch(`${api}/v1/webhooks/github`, { method: 'POST', headers: d.headers, body: d.body });
        return { status: res.status, json: (await res.json()) as Record<string, unknown> };
      },
      async expectNoLook(from) {
        // A look is started before the delivery is answered (sync() then the reply): one more request through the
        // agent's event loop, and a look begun would have sent its first request by then.
        expect((await fetch(`${api}/healthz`)).status).toBe(200);
        const reads = gitServer.requests
          .slice(from)
          .filter((r) => r.path.endsWith('/git-upload-pack') || r.query.includes('git-upload-pack'));
        expect(reads.map((r) => `${r.method} ${r.path}`)).toEqual([]);
      },
      async appliedOk(commit, mark, deadlineMs) {
        const plan = await agent.waitForLog(
          is.revision(commit, 'reconcile plan'),
          deadlineMs,
          mark,
          `the apply of ${commit.slice(0, 12)}`,
        );
        const end = await agent.waitForLog(is.applyEnd, deadlineMs, agent.logs.indexOf(plan), 'the end of the apply');
        expect(end.msg, agent.tail()).toMatch(/^(all components running|apply finished)$/);
        expect(world.applied()).toBe(commit);
      },
      close,
    };
    await agent.waitForLog(is.msg('HTTP API listening'), 30_000, 0, 'the HTTP API');
    await world.appliedOk(first, 0, 30_000);
    return world;
  } catch (e) {
    await close();
    throw e;
  }
}
