// Issue 6, end to end: the real agent (`keystone agent --repo URL`) follows a branch served by a real Git smart-HTTP
// server (git http-backend), applies commits signed by `keystonectl sign`, and reports on each commit through Git notes
// (read back with the git CLI, as an operator would) and the GitHub statuses API (a contract server written from
// GitHub's documentation). Real component processes: the four-component stack of the worked example.
//
// Two agents, one per describe block: one with a 10-minute poll, so that only POST /v1/sync or the webhook makes it
// look (the tests decide when a commit is seen), and one with a 1 s poll for what is about polling (a burst, a server
// that goes away). The cases of one block share its agent and run in order; each starts from the device converged
// on the branch tip and leaves it so.
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import {
  startGitHubContractServer,
  type ContractStatus,
  type GitHubContractServer,
} from '../support/github-contract-server.js';
import { freePorts, neverHealthy, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const DEVICE = 'edge-07';
const CONTEXT = `keystone/${DEVICE}`;
const OWNER = 'acme';
const GH_REPO = 'fleet';
const GIT_TOKEN = 'git-token-for-the-gitops-e2e';
const GITHUB_TOKEN = 'github-token-for-the-gitops-e2e';
const WEBHOOK_SECRET = 'webhook-secret-for-the-gitops-e2e';
const STACK = ['influxdb', 'api', 'telemetry', 'web'];

/** Async on purpose: the Git server answers from this very process. */
async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-c', `http.extraHeader=Authorization: Bearer ${GIT_TOKEN}`, ...args], {
    cwd,
    env: GIT_ENV,
  });
  return stdout.trim();
}

/** Polls `probe` until it returns something other than undefined; rejects at the deadline. */
async function until<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  deadlineMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface NoteLine {
  state: string;
  time: string;
  description: string;
}

/** One agent following one repository, with everything around it. */
interface World {
  fx: StackFixture;
  h: AgentHarness;
  agent: AgentProcess;
  gitServer: GitHttpServer;
  github: GitHubContractServer;
  /** The bare repository the server serves. */
  bare: string;
  url: string;
  apiBase: string;
  apiToken: string;
  /** Writes the fixture's components, signs, commits everything on the last applied commit and pushes; returns the commit id. */
  pushSigned(message: string): Promise<string>;
  /** Commits the work tree as it is (whatever it holds) on the last applied commit; returns the commit id. */
  commitOnApplied(message: string): Promise<string>;
  /** Commits the work tree as it is on HEAD; returns the commit id. */
  commit(message: string): Promise<string>;
  /** The last commit the device applied (a manual apply in between does not count). */
  lastApplied(): string;
  /** Pushes `what` (default HEAD) to main over HTTP, or to `target` (the bare repository's path) directly. */
  push(opts?: { what?: string; force?: boolean; target?: string }): Promise<void>;
  /** This device's line of the commit's note on the remote, read with the git CLI; undefined when there is none. */
  note(commit: string): Promise<NoteLine | undefined>;
  /** This device's GitHub statuses of the commit, oldest first. */
  statuses(commit: string): ContractStatus[];
  api(
    method: 'GET' | 'POST',
    path: string,
    init?: { body?: string; headers?: Record<string, string>; auth?: boolean },
  ): Promise<{ status: number; json: Record<string, unknown> }>;
  /** POST /v1/sync: look at the branch now. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

async function startWorld(opts: { poll: string; args?: string[] }): Promise<World> {
  const root = mkdtempSync(join(tmpdir(), 'keystone-gitops-'));
  const cleanups: Array<() => Promise<void> | void> = [() => rmSync(root, { recursive: true, force: true })];
  const close = async () => {
    for (const c of cleanups.reverse()) await c();
  };
  try {
    const gitServer = await startGitHttpServer({ root: join(root, 'srv'), token: GIT_TOKEN });
    cleanups.push(() => gitServer.stop());
    const bare = gitServer.createRepository(GH_REPO);
    const url = gitServer.url(GH_REPO);
    const github = await startGitHubContractServer({ token: GITHUB_TOKEN });
    cleanups.push(() => github.stop());
    const fx = await stackFixture({ signed: true });
    cleanups.push(() => fx.cleanup());
    await git(fx.dir, 'init', '--quiet', '--initial-branch=main');

    const secret = (name: string, value: string) => {
      const f = join(root, name);
      writeFileSync(f, `${value}\n`, { mode: 0o600 });
      return f;
    };
    const [port] = (await freePorts(1)) as [number];
    const apiBase = `http://127.0.0.1:${port}`;

    const commit = async (message: string) => {
      await git(fx.dir, 'add', '-A');
      await git(fx.dir, 'commit', '--quiet', '--allow-empty', '-m', message);
      return git(fx.dir, 'rev-parse', 'HEAD');
    };
    const push: World['push'] = async (o = {}) => {
      await git(
        fx.dir,
        'push',
        '--quiet',
        ...(o.force ? ['--force'] : []),
        o.target ?? url,
        `${o.what ?? 'HEAD'}:refs/heads/main`,
      );
    };
    const h = new AgentHarness();
    cleanups.push(() => h.cleanup());

    const first = await (async () => {
      fx.write();
      await fx.sign();
      const id = await commit('the four-component stack');
      await push();
      return id;
    })();
    const agent = h.start({
      repo: url,
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: [
        '--ref',
        'main',
        '--poll',
        opts.poll,
        '--device',
        DEVICE,
        '--status',
        'git-notes,github',
        '--github-repo',
        `${OWNER}/${GH_REPO}`,
        '--github-api',
        github.apiBase,
        '--github-token-file',
        secret('github-token', GITHUB_TOKEN),
        '--git-token-file',
        secret('git-token', GIT_TOKEN),
        '--webhook-secret-file',
        secret('webhook-secret', WEBHOOK_SECRET),
        '--listen',
        `127.0.0.1:${port}`,
        ...(opts.args ?? []),
      ],
    });
    await agent.waitForLog(is.msg('HTTP API listening'), 20_000, 0, 'the HTTP API');
    const apiToken = readFileSync(join(h.stateDir, 'api-token'), 'utf8').trim();

    const lastApplied = () => {
      const applied = h.appliedRevision()?.id;
      if (applied !== undefined && /^[0-9a-f]{40}$/.test(applied)) return applied;
      const last = h.history().find((e) => /^[0-9a-f]{40}$/.test(e.revision) && e.outcome !== 'rejected');
      if (!last) throw new Error('no commit applied yet');
      return last.revision;
    };
    // Every new commit is a child of the last applied one, pushed over refused commits (--force). A tip more than one
    // commit ahead makes the agent deepen its shallow cache, which can hang it (BUG: see the burst test below); the
    // cases that are not about that keep clear of it.
    const commitOnApplied = async (message: string) => {
      await git(fx.dir, 'reset', '--quiet', '--soft', lastApplied());
      return commit(message);
    };
    const world: World = {
      fx,
      h,
      agent,
      gitServer,
      github,
      bare,
      url,
      apiBase,
      apiToken,
      commit,
      commitOnApplied,
      lastApplied,
      push,
      async pushSigned(message) {
        fx.write();
        await fx.sign();
        const id = await commitOnApplied(message);
        await push({ force: true });
        return id;
      },
      async note(id) {
        try {
          // docs/gitops.md's commands: one fetch of every device's notes ref (and the shared one of earlier agents).
          await git(fx.dir, 'fetch', '--quiet', url, '+refs/notes/keystone*:refs/notes/keystone*');
          const text = await git(fx.dir, 'log', '--no-walk', '--notes=keystone*', '--format=%N', id);
          for (const line of text.split('\n')) {
            const m = /^(\S+) (\S+) (\S+) ?(.*)$/.exec(line);
            if (m && m[1] === CONTEXT) return { state: m[2]!, time: m[3]!, description: m[4]! };
          }
          return undefined;
        } catch {
          return undefined; // no notes ref yet, or no note for that commit
        }
      },
      statuses: (id) =>
        github
          .list(OWNER, GH_REPO, id)
          .filter((s) => s.context === CONTEXT)
          .reverse(),
      async api(method, path, init = {}) {
        const res = await fetch(`${apiBase}${path}`, {
          method,
          headers: {
            ...(init.auth !== false && { authorization: `Bearer ${apiToken}` }),
            ...(init.body !== undefined && { 'content-type': 'application/json' }),
            ...init.headers,
          },
          ...(init.body !== undefined && { body: init.body }),
        });
        const text = await res.text();
        return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
      },
      async sync() {
        const r = await world.api('POST', '/v1/sync');
        expect(r.status).toBe(202);
      },
      close,
    };
    await appliedOk(world, first, 0);
    await reported(world, first, 'success');
    return world;
  } catch (e) {
    await close();
    throw e;
  }
}

/** Waits for the reconcile of `commit` (after log index `mark`) and the end of its apply; returns both lines. */
async function applied(
  w: World,
  commit: string,
  mark: number,
  deadlineMs = 30_000,
): Promise<{ plan: LogLine; end: LogLine }> {
  const plan = await w.agent.waitForLog(
    is.revision(commit, 'reconcile plan'),
    deadlineMs,
    mark,
    `the reconcile of ${commit.slice(0, 12)}`,
  );
  const end = await w.agent.waitForLog(
    is.applyEnd,
    deadlineMs,
    w.agent.logs.indexOf(plan),
    `the end of the apply of ${commit.slice(0, 12)}`,
  );
  return { plan, end };
}

/** As applied(), and the apply succeeded: every component running, the commit recorded as the applied revision. */
async function appliedOk(
  w: World,
  commit: string,
  mark: number,
  deadlineMs = 30_000,
): Promise<{ plan: LogLine; end: LogLine }> {
  const r = await applied(w, commit, mark, deadlineMs);
  expect(r.end.msg, w.agent.tail()).toMatch(/^(all components running|apply finished)$/);
  expect(w.h.appliedRevision()?.id).toBe(commit);
  return r;
}

/** Waits until this device's latest GitHub status of `commit` is `state`; returns them all, oldest first. */
async function githubShows(w: World, commit: string, state: string): Promise<ContractStatus[]> {
  return until(
    () => {
      const l = w.statuses(commit);
      return l.at(-1)?.state === state ? l : undefined;
    },
    `a GitHub ${state} status for ${commit.slice(0, 12)} (has ${JSON.stringify(w.statuses(commit).map((s) => s.state))})`,
  );
}

/** Waits until this device's line of the commit's note on the remote says `state`. */
async function noteShows(w: World, commit: string, state: string): Promise<NoteLine> {
  return until(
    async () => {
      const n = await w.note(commit);
      return n?.state === state ? n : undefined;
    },
    `a ${state} note for ${commit.slice(0, 12)}`,
  );
}

/** Both reporters show `state` as this device's latest status of `commit`. */
async function reported(
  w: World,
  commit: string,
  state: string,
): Promise<{ github: ContractStatus[]; note: NoteLine }> {
  return { github: await githubShows(w, commit, state), note: await noteShows(w, commit, state) };
}

/** The `state=starting` lines of each component after `mark`: one per (re)start. */
function startsAfter(agent: AgentProcess, mark: number): Record<string, number> {
  return Object.fromEntries(STACK.map((n) => [n, agent.lines(is.state(n, 'starting'), mark).length]));
}

const stackPids = (h: AgentHarness) =>
  Object.fromEntries(Object.entries(h.pidsOf()).filter(([n]) => STACK.includes(n)));

/** Every stack component is alive as recorded: its recorded pid still works in its work directory. */
function expectAlive(h: AgentHarness, pids: Record<string, number>): void {
  for (const [name, pid] of Object.entries(pids))
    expect(
      h.processesOf(name).map((p) => p.pid),
      `${name} (pid ${pid}) is alive`,
    ).toContain(pid);
}

const signature = (body: string, secret = WEBHOOK_SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

// Regression (was a bug, the two tests marked below): fetches asked for thin packs stored as they came, and
// isomorphic-git reads an object from the first pack that lists it with no check for delta cycles. When content came
// back (a revert) or the shallow cache was deepened (a tip several commits ahead, as after a burst), the same objects
// arrived in two packs as ref-deltas of each other, and reading one looped forever: the agent spun at 100 % CPU and
// never applied again. Thin packs are asked for again, but completed against the cache before they are stored
// (src/git/thin-pack.ts), so no stored pack has a delta into another.
const DELTA_CYCLE_BUG = 'regression: thin packs made delta cycles across packs that hung the agent';

describe(
  'a device following a branch (long poll: looks are driven by POST /v1/sync and the webhook)',
  { timeout: 90_000 },
  () => {
    let w: World;

    beforeAll(async () => {
      w = await startWorld({ poll: '10m', args: ['--on-failure', 'rollback'] });
    }, 60_000);
    afterAll(async () => {
      await w?.close();
    }, 30_000);

    const snapshot = () => ({ applied: w.h.appliedRevision()!.id, pids: stackPids(w.h) });

    /**
     * A refused commit: the refusal is logged for that commit, both reporters show `error` with the code (and nothing
     * else since `earlierStatuses`), nothing was stopped or started and the applied revision is what it was.
     */
    async function expectRefused(
      commit: string,
      code: string,
      mark: number,
      before: ReturnType<typeof snapshot>,
      earlierStatuses = 0,
    ): Promise<void> {
      const refusal = await w.agent.waitForLog(
        (l) =>
          l.revision === commit &&
          (l.msg === 'revision refused; still running the previous one' ||
            l.msg === 'commit refused; still running the previous one'),
        20_000,
        mark,
        `the refusal of ${commit.slice(0, 12)}`,
      );
      expect(`${String(refusal.code ?? '')} ${String(refusal.reason ?? '')}`).toContain(code);
      const { github, note } = await reported(w, commit, 'error');
      expect(
        github.slice(earlierStatuses).map((s) => s.state),
        'refused before applying: no pending',
      ).toEqual(['error']);
      expect(github.at(-1)!.description).toContain(code);
      expect(note.description).toContain(code);
      expect(w.h.history()[0]).toMatchObject({ revision: commit, outcome: 'rejected' });
      expect(w.h.appliedRevision()?.id).toBe(before.applied);
      expect(stackPids(w.h)).toEqual(before.pids);
      expectAlive(w.h, before.pids);
      expect(startsAfter(w.agent, mark)).toEqual({ influxdb: 0, api: 0, telemetry: 0, web: 0 });
    }

    it('a signed push is applied (api and web restart, influxdb and telemetry keep their pids) and reported: pending, then success', async () => {
      const before = stackPids(w.h);
      const mark = w.agent.mark();
      w.fx.bumpVersion('api', '1.5.0');
      const commit = await w.pushSigned('api 1.5.0');
      await w.sync();
      const { plan } = await appliedOk(w, commit, mark);
      expect(plan).toMatchObject({
        stop_order: ['web', 'api'],
        start_order: ['api', 'web'],
        no_touch: ['influxdb', 'telemetry'],
      });

      const after = stackPids(w.h);
      expect(after.influxdb).toBe(before.influxdb);
      expect(after.telemetry).toBe(before.telemetry);
      expect(after.api).not.toBe(before.api);
      expect(after.web).not.toBe(before.web);
      expectAlive(w.h, after);
      expect(w.h.component('api')?.version).toBe('1.5.0');
      expect(startsAfter(w.agent, mark)).toEqual({ influxdb: 0, api: 1, telemetry: 0, web: 1 });
      // Who signed it, as the agent verified it, is shown with the revision (the dashboard's revision panel).
      const verified = w.agent.lines(is.msg('signature verified'), mark).find((l) => l.revision === commit);
      const revision = (await w.api('GET', '/v1/revision')).json as {
        id: string;
        signers: string[];
        signedAt: string;
        wave: string | null;
      };
      expect(revision).toMatchObject({
        id: commit,
        signers: verified?.signers,
        signedAt: verified?.signed_at,
        wave: null,
      });
      expect(revision.signers).toHaveLength(1);

      const { github, note } = await reported(w, commit, 'success');
      // Pending (with the dry run) came first, then success, under this device's context.
      expect(github.map((s) => s.state)).toEqual(['pending', 'success']);
      expect(github[0]!.description).toMatch(/api/);
      expect(github.every((s) => s.context === CONTEXT)).toBe(true);
      expect(note.description).toMatch(/applied/);
      expect(Number.isNaN(Date.parse(note.time))).toBe(false);
    });

    // The refused commits change web only, and every later commit brings a web recipe of its own: no good commit
    // brings back content of a refused one (content that comes back can trigger the delta-cycle BUG below).
    it('refuses an unsigned push (an edit without updating SHA256SUMS): error status, nothing restarted', async () => {
      const before = snapshot();
      const mark = w.agent.mark();
      const version = w.fx.spec('web').version;
      w.fx.bumpVersion('web', '1.27.5'); // edited, not signed again
      const commit = await w.commitOnApplied('web 1.27.5, unsigned');
      await w.push({ force: true });
      await w.sync();
      await expectRefused(commit, 'KS_DIGEST_MISMATCH', mark, before);
      w.fx.bumpVersion('web', version);
    });

    it('refuses a tampered push (a recipe edited after signing): error status, nothing restarted', async () => {
      const before = snapshot();
      const mark = w.agent.mark();
      w.fx.bumpVersion('web', '1.28.0');
      await w.fx.sign();
      w.fx.edit(w.fx.recipePath('web'), 'no_new_privileges = true', 'no_new_privileges = false');
      const commit = await w.commitOnApplied('web 1.28.0, signed, then tampered with');
      await w.push({ force: true });
      await w.sync();
      await expectRefused(commit, 'KS_DIGEST_MISMATCH', mark, before);
      w.fx.write();
    });

    it('refuses a force-push back to an older signed commit: error status on that commit, nothing restarted', async () => {
      const before = snapshot();
      const mark = w.agent.mark();
      const older = await git(w.fx.dir, 'rev-list', '--max-parents=0', 'HEAD'); // the first commit: signed, applied once
      const earlier = w.statuses(older).length;
      expect(earlier).toBeGreaterThan(0);
      await w.push({ what: older, force: true });
      await w.sync();
      await expectRefused(older, 'KS_HISTORY_REWRITE', mark, before, earlier);
    });

    it('refuses an older signed set replayed in a new commit (KS_SIGNATURE_REPLAYED): error status, nothing restarted', async () => {
      // A release signed, then superseded before it was deployed (web 1.29.0 signed, then 1.30.0 signed and applied).
      const signedFiles = [w.fx.recipePath('web'), 'SHA256SUMS', 'SHA256SUMS.minisig'];
      w.fx.bumpVersion('web', '1.29.0');
      await w.fx.sign();
      const old = Object.fromEntries(signedFiles.map((f) => [f, readFileSync(join(w.fx.dir, f))]));
      w.fx.bumpVersion('web', '1.30.0');
      const mark0 = w.agent.mark();
      const current = await w.pushSigned('web 1.30.0');
      await w.sync();
      await appliedOk(w, current, mark0);
      await reported(w, current, 'success');

      // The older set copied into a new commit: every file matches its signed digest, only the signature is older than
      // the applied revision's.
      const before = snapshot();
      const mark = w.agent.mark();
      for (const [f, bytes] of Object.entries(old)) writeFileSync(join(w.fx.dir, f), bytes);
      const verify = await runCtl(['verify', ...w.fx.trustArgs], w.fx.dir);
      expect(verify.code, verify.stderr).toBe(0);
      const commit = await w.commitOnApplied('web 1.29.0, with its old signature');
      await w.push({ force: true });
      await w.sync();
      await expectRefused(commit, 'KS_SIGNATURE_REPLAYED', mark, before);
      expect(w.h.component('web')?.version).toBe('1.30.0');
      w.fx.write();
    });

    it('the webhook: a wrongly signed delivery is refused (401) and fetches nothing; a signed one makes the agent look at once', async () => {
      const head = w.lastApplied();
      // Every status so far is delivered (notes deliveries use the Git server too): from here on the server's log is
      // the source's alone.
      await reported(w, head, 'success');
      w.fx.bumpVersion('web', '1.31.0');
      const commit = await w.pushSigned('web 1.31.0');
      const body = JSON.stringify({
        ref: 'refs/heads/main',
        before: head,
        after: commit,
        repository: { full_name: `${OWNER}/${GH_REPO}` },
      });
      const headers = { 'x-github-event': 'push', 'x-github-delivery': 'f0e3b9d2-0000-4000-8000-000000000001' };

      const requestsBefore = w.gitServer.requests.length;
      const mark = w.agent.mark();
      const bad = await w.api('POST', '/v1/webhooks/github', {
        body,
        auth: false,
        headers: { ...headers, 'x-hub-signature-256': signature(body, 'not-the-secret') },
      });
      expect(bad.status).toBe(401);
      expect(bad.json).toMatchObject({ error: { code: 'KS_WEBHOOK_SIGNATURE' } });
      await w.agent.waitForLog(is.msg('webhook refused: bad signature'), 10_000, mark, 'the refusal of the webhook');
      // One more round trip through the agent after the refusal: a look it had started would have asked the server by now.
      expect((await w.api('GET', '/v1/revision')).json).toMatchObject({ id: head });
      const uploadPack = (r: { path: string; query: string }) =>
        r.path.endsWith('/git-upload-pack') || r.query.includes('git-upload-pack');
      expect(w.gitServer.requests.slice(requestsBefore).filter(uploadPack)).toEqual([]);
      expect(w.agent.lines(is.msg('new revision'), mark)).toEqual([]);

      const good = await w.api('POST', '/v1/webhooks/github', {
        body,
        auth: false,
        headers: { ...headers, 'x-hub-signature-256': signature(body) },
      });
      expect(good.status).toBe(202);
      expect(good.json).toMatchObject({ sync: 'requested', ref: 'refs/heads/main', after: commit });
      const { plan } = await appliedOk(w, commit, mark);
      expect(plan).toMatchObject({ stop_order: ['web'], start_order: ['web'] });
      expect(w.gitServer.requests.slice(requestsBefore).some(uploadPack)).toBe(true);
      await reported(w, commit, 'success');
    });

    it('keystonectl apply --force suspends the sync: a push is held (GET /v1/revision says so) until keystonectl resume applies it', async () => {
      const agentArgs = ['--agent', w.apiBase, '--token', w.apiToken];
      const mark = w.agent.mark();
      w.fx.bumpVersion('telemetry', '1.30.0');
      await w.fx.sign();
      const forced = await runCtl(['apply', w.fx.plan, ...w.fx.trustArgs, '--force', ...agentArgs], w.fx.dir);
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout).toMatch(/the Git sync is suspended until `keystonectl resume`/);
      const manual = w.h.appliedRevision()!.id;
      expect(manual).toMatch(/^manual:/);
      expect(w.h.component('telemetry')?.version).toBe('1.30.0');

      const mark2 = w.agent.mark();
      w.fx.bumpVersion('web', '1.32.0');
      const commit = await w.pushSigned('web 1.32.0 while the sync is suspended');
      await w.sync();
      await w.agent.waitForLog(
        is.revision(commit, 'the Git sync is suspended: holding this revision until `keystonectl resume`'),
        20_000,
        mark2,
        'the commit to be held',
      );
      const rev = await w.api('GET', '/v1/revision');
      expect(rev.json).toMatchObject({
        id: manual,
        sync: { following: 'git', suspended: { revision: manual, reason: 'a forced manual apply' }, held: commit },
      });
      expect(w.agent.lines(is.revision(commit, 'reconcile plan'), mark2)).toEqual([]);
      expect(w.h.component('web')?.version).toBe('1.31.0');

      const resumed = await runCtl(['resume', ...agentArgs], w.fx.dir);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain(`applying ${commit}`);
      const { plan } = await appliedOk(w, commit, mark2);
      // telemetry 1.30.0 is in the commit too, and already runs: untouched.
      expect(plan).toMatchObject({
        stop_order: ['web'],
        start_order: ['web'],
        no_touch: ['influxdb', 'api', 'telemetry'],
      });
      expect(w.h.component('web')?.version).toBe('1.32.0');
      expect((await w.api('GET', '/v1/revision')).json).toMatchObject({
        id: commit,
        sync: { following: 'git', suspended: null, held: null },
      });
      expect((await reported(w, commit, 'success')).github.map((s) => s.state)).toEqual(['pending', 'success']);
      expect(startsAfter(w.agent, mark)).toEqual({ influxdb: 0, api: 0, telemetry: 1, web: 1 });
    });

    it('--on-failure rollback: a commit whose new component never gets healthy is reported as failure and rolled back', async () => {
      const good = w.lastApplied();
      const pids = stackPids(w.h);
      const mark = w.agent.mark();
      const [closed] = (await freePorts(1)) as [number];
      w.fx.add(neverHealthy('broken', closed));
      const bad = await w.pushSigned('add broken, which never gets healthy');
      await w.sync();
      const failed = await w.agent.waitForLog(
        (l) => l.revision === bad && typeof l.msg === 'string' && l.msg.startsWith('apply failed:'),
        30_000,
        mark,
        'the failed apply',
      );
      expect(failed.failed).toEqual(['broken']);

      const { github, note } = await reported(w, bad, 'failure');
      expect(github.map((s) => s.state)).toEqual(['pending', 'failure']);
      expect(github.at(-1)!.description).toMatch(/broken/);
      expect(github.at(-1)!.description).toContain(`rolling back to ${good.slice(0, 7)}`);
      expect(note.description).toContain(`rolling back to ${good.slice(0, 7)}`);

      // The rollback applies the last good commit again: broken is stopped and gone, its neighbours never touched.
      await appliedOk(w, good, w.agent.logs.indexOf(failed));
      expect(w.h.component('broken')).toBeUndefined();
      expect(w.h.processesOf('broken')).toEqual([]);
      expect(stackPids(w.h)).toEqual(pids);
      expectAlive(w.h, pids);
      expect(w.h.history().slice(0, 2)).toMatchObject([
        { revision: good, outcome: 'success' },
        { revision: bad, outcome: 'failure' },
      ]);
      // The rollback is the agent's own doing: the good commit's statuses stay as they were.
      expect(w.statuses(good).map((s) => s.state)).toEqual(['pending', 'success']);
      w.fx.remove('broken');
    });

    // Last of this agent: with the bug it hangs the agent for good.
    it(`a revert, signed again, is a rollback: api and web restart once per commit, influxdb and telemetry never (${DELTA_CYCLE_BUG})`, async () => {
      const mark = w.agent.mark();
      const pids0 = stackPids(w.h);
      const version = w.fx.spec('api').version;
      w.fx.bumpVersion('api', '1.6.0');
      const v2 = await w.pushSigned('api 1.6.0');
      await w.sync();
      await appliedOk(w, v2, mark, 15_000);
      expect(w.h.component('api')?.version).toBe('1.6.0');
      await reported(w, v2, 'success');

      const mark2 = w.agent.mark();
      // git revert restores the old files and the old signature; a fresh signature makes it newer than v2's.
      await git(w.fx.dir, 'revert', '--no-edit', '--no-commit', 'HEAD');
      w.fx.bumpVersion('api', version); // the fixture's model follows the revert
      expect(
        await git(w.fx.dir, 'diff', 'HEAD~1', '--', 'recipes', 'plans'),
        'the revert restored exactly the previous recipes',
      ).toBe('');
      await w.fx.sign();
      const revert = await w.commit('Revert "api 1.6.0"');
      await w.push();
      await w.sync();
      const { plan } = await appliedOk(w, revert, mark2, 15_000);
      expect(plan).toMatchObject({
        stop_order: ['web', 'api'],
        start_order: ['api', 'web'],
        no_touch: ['influxdb', 'telemetry'],
      });
      expect(w.h.component('api')?.version).toBe(version);
      await reported(w, revert, 'success');
      expect(startsAfter(w.agent, mark)).toEqual({ influxdb: 0, api: 2, telemetry: 0, web: 2 });
      const pids = stackPids(w.h);
      expect(pids.influxdb).toBe(pids0.influxdb);
      expect(pids.telemetry).toBe(pids0.telemetry);

      // Reverting keeps working: a comment added to each file in turn and reverted (nothing restarts). Each file is
      // one more independent chance for the delta cycle, so that with the bug this test fails (almost) every time.
      for (const file of [...['influxdb', 'api', 'telemetry', 'web'].map((n) => w.fx.recipePath(n)), w.fx.plan]) {
        const m = w.agent.mark();
        w.fx.edit(file, /^/, `# a note on ${file}\n`);
        await w.fx.sign();
        const change = await w.commit(`comment on ${file}`);
        await w.push();
        await w.sync();
        await appliedOk(w, change, m, 15_000);
        const m2 = w.agent.mark();
        await git(w.fx.dir, 'revert', '--no-edit', '--no-commit', 'HEAD');
        await w.fx.sign();
        const back = await w.commit(`Revert "comment on ${file}"`);
        await w.push();
        await w.sync();
        await appliedOk(w, back, m2, 15_000);
      }
      expect(stackPids(w.h)).toEqual(pids);
    });
  },
);

describe('a device polling a branch every second', { timeout: 90_000 }, () => {
  let w: World;

  beforeAll(async () => {
    w = await startWorld({ poll: '1s' });
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  }, 30_000);

  it('the Git server and the status API go away: the device keeps running; when they return it catches up and the queued statuses arrive', async () => {
    const mark = w.agent.mark();
    await w.github.stop();
    w.fx.bumpVersion('api', '1.8.0');
    const c1 = await w.pushSigned('api 1.8.0');
    await w.agent.waitForLog(is.revision(c1, 'new revision'), 20_000, mark, 'the poll to find the commit');
    // The commit is fetched; the server goes away while it applies, so its statuses can only wait in the outbox.
    await w.gitServer.stop();
    await appliedOk(w, c1, mark);
    const undelivered = (reporter: string) => (l: LogLine) =>
      l.msg === 'commit status not delivered; will retry' && l.commit === c1 && l.reporter === reporter;
    await w.agent.waitForLog(undelivered('git-notes'), 20_000, mark, 'a note that could not be delivered');
    await w.agent.waitForLog(undelivered('github'), 20_000, mark, 'a GitHub status that could not be delivered');

    // A push the device cannot see: straight into the bare repository while the HTTP server is down.
    const pids = stackPids(w.h);
    w.fx.bumpVersion('api', '1.8.1');
    await w.fx.sign();
    const c2 = await w.commit('api 1.8.1, pushed while the server is down');
    await w.push({ target: w.bare });
    const mark2 = w.agent.mark();
    // It keeps looking (and failing), and keeps running what it has.
    await until(
      () => (w.agent.lines(is.msgIncludes('cannot reach the Git source'), mark2).length >= 2 ? true : undefined),
      'two failed looks',
    );
    expect(w.h.appliedRevision()?.id).toBe(c1);
    expect(stackPids(w.h)).toEqual(pids);
    expectAlive(w.h, pids);
    expect(startsAfter(w.agent, mark2)).toEqual({ influxdb: 0, api: 0, telemetry: 0, web: 0 });
    expect(w.statuses(c1), 'nothing reached GitHub meanwhile').toEqual([]);

    await w.gitServer.start();
    await w.github.start();
    await appliedOk(w, c2, mark2);
    expect(w.h.component('api')?.version).toBe('1.8.1');
    for (const c of [c1, c2]) {
      expect((await githubShows(w, c, 'success')).map((s) => s.state)).toEqual(['pending', 'success']);
      await noteShows(w, c, 'success');
    }
    expect(startsAfter(w.agent, mark)).toEqual({ influxdb: 0, api: 2, telemetry: 0, web: 2 });
  });

  // Last of this agent: with the bug it hangs the agent for good.
  it(`a burst of 20 signed pushes collapses: the device ends at the newest commit, having applied far fewer (${DELTA_CYCLE_BUG})`, async () => {
    const mark = w.agent.mark();
    const historyBefore = w.h.history().length;
    const commits: string[] = [];
    // Twenty signed commits made first, then pushed one after the other, each on the previous: the device finds the
    // tip several commits ahead of what it applied. (Signing between pushes spread the burst over as long as the
    // machine took to sign, so a busy machine made it no burst at all for a device polling every second.)
    for (let i = 1; i <= 20; i++) {
      w.fx.bumpVersion('api', `1.9.${i}`);
      await w.fx.sign();
      commits.push(await w.commit(`api 1.9.${i}`));
    }
    for (const c of commits) await w.push({ what: c });
    const newest = commits.at(-1)!;
    await appliedOk(w, newest, mark, 20_000);
    expect(w.h.component('api')?.version).toBe('1.9.20');

    const entries = w.h.history().slice(0, w.h.history().length - historyBefore);
    expect(
      entries.every((e) => commits.includes(e.revision) && e.outcome === 'success'),
      'only burst commits, each a success',
    ).toBe(true);
    expect(entries[0]!.revision).toBe(newest);
    expect(entries.length, `applied ${entries.length} of 20`).toBeLessThanOrEqual(6);
    // Newer ones only, in push order: never a stale commit after a newer one.
    const order = entries.map((e) => commits.indexOf(e.revision)).reverse();
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(startsAfter(w.agent, mark)).toMatchObject({
      influxdb: 0,
      telemetry: 0,
      api: entries.length,
      web: entries.length,
    });
    await reported(w, newest, 'success');
  });
});
