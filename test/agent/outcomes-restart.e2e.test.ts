// Issue 27, end to end (SPEC §5, "Outcomes are the truth, across restarts"): what a device reported for a revision is
// what happened, however often its agent is restarted (SIGTERM, kill -9). Real agents (`keystone agent` as child
// processes, harness in test/support/agent-harness.ts), real component processes, a real Git smart-HTTP server
// (`git http-backend`) receiving the device's Git notes. Most cases run one process component whose health check
// never passes (tcp://127.0.0.1:1, 200 ms × 5: a start budget of 1 s): the apply fails, the instance runs on.
//
// What is read, and where: the store's history and outbox rows (read-only sqlite), the note of each commit in the bare
// repository the server serves, and the notes ref's own log (one notes commit per delivered status, subject
// `keystone/<device>: <state> <commit>`): everything the device ever said, not only its last word.
//
// Each case has its own fixture, state directory, agent and server, so the cases run concurrently.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { historyEntries } from '../../src/cli/commands/history.js';
import { DEVICE_NOTES_PREFIX } from '../../src/status/device-notes-ref.js';
import { readStatusNotes } from '../../src/status/status-notes-read.js';
import { STATE_DB_FILE, type HistoryEntry } from '../../src/store/state-store.js';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { until } from '../support/composite-fixture.js';
import { GIT_ENV } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer, type ServedRequest } from '../support/git-http-server.js';
import { freePorts, sleeper, stackFixture, type ComponentSpec, type StackFixture } from '../support/stack-fixture.js';

const run = promisify(execFile);
/** Async on purpose: the Git server answers from this very process. */
const git = async (cwd: string, ...args: string[]) => (await run('git', ['-C', cwd, ...args], { env: GIT_ENV })).stdout.trim();

/** Runs, but its check never passes: nothing listens on port 1. Start budget 200 ms × 5 = 1 s. */
function failing(name: string, version = '1.0.0', check = 'tcp://127.0.0.1:1'): ComponentSpec {
  return { name, version, command: 'sleep', args: ['1000'], health: { check, interval: '200ms', timeout: '150ms', failureThreshold: 5 } };
}

/** The two ways an agent goes away: a stop (systemctl restart, an upgrade) and a power cut. */
const RESTARTS = [
  { how: 'SIGTERM', down: (a: AgentProcess) => a.stop() },
  { how: 'kill -9', down: (a: AgentProcess) => a.kill9() },
] as const;

const RESUMED = 'resumed the revision applied last';
const FAILED_BEFORE = 'failed on this device before';
const startsWith = (text: string) => (l: LogLine) => typeof l.msg === 'string' && l.msg.startsWith(text);
const outcomeOf = (e: HistoryEntry): string | undefined => e.outcome as string | undefined;
/** The apply rows of `rev` (finished or not), oldest first: not the refusals, not the recoveries. */
const appliesOf = (h: AgentHarness, rev: string) =>
  h
    .history()
    .filter((e) => e.revision === rev && outcomeOf(e) !== 'rejected' && outcomeOf(e) !== 'recovered')
    .reverse();
const outcomes = (h: AgentHarness, rev?: string) =>
  h
    .history()
    .filter((e) => rev === undefined || e.revision === rev)
    .reverse()
    .map((e) => `${e.revision.slice(0, 12)} ${outcomeOf(e) ?? 'unfinished'}`);

/**
 * The restarted agent is done with the revision it ran: it resumed it (the contract), or — today's code — applied it
 * again (the end of an apply). Either way the store then says what the restart made of the outcome.
 */
const resumedOrApplied = (agent: AgentProcess, what: string, after = 0) =>
  agent.waitForLog((l) => startsWith(RESUMED)(l) || is.applyEnd(l), 30_000, after, what);

interface OutboxRow {
  id: number;
  state: string;
  description: string;
  createdAt: number;
  deliveredAt: number | null;
  nextAttemptAt: number | null;
  attempts: number;
  lastError: string | null;
}

/** Every status this device ever enqueued for `commit` (the outbox keeps 500 finished rows), oldest first. */
function outboxOf(h: AgentHarness, commit: string): OutboxRow[] {
  const db = new Sqlite(join(h.stateDir, STATE_DB_FILE), { readonly: true, fileMustExist: true, timeout: 5_000 });
  try {
    return db
      .prepare(
        `SELECT id, state, description, created_at AS createdAt, delivered_at AS deliveredAt, next_attempt_at AS nextAttemptAt, attempts, last_error AS lastError
         FROM status_outbox WHERE "commit" = ? ORDER BY id`,
      )
      .all(commit) as OutboxRow[];
  } finally {
    db.close();
  }
}

/** Waits until every status of `commit` was delivered (none open); returns them. */
async function outboxDelivered(h: AgentHarness, commit: string, deadlineMs = 30_000): Promise<OutboxRow[]> {
  try {
    return await until(
      () => {
        const rows = outboxOf(h, commit);
        return rows.length > 0 && rows.every((r) => r.nextAttemptAt === null) ? rows : undefined;
      },
      deadlineMs,
      `every status of ${commit.slice(0, 12)} delivered`,
    );
  } catch (e) {
    const rows = outboxOf(h, commit).map((r) => `${r.state}${r.deliveredAt !== null ? ' delivered' : r.nextAttemptAt !== null ? ` open (${r.lastError ?? ''})` : ` given up (${r.lastError ?? ''})`}`);
    throw new Error(`${(e as Error).message}; outbox: ${rows.join(', ')}`);
  }
}

/** One device following one branch of a real Git server, with its notes reporter on. */
interface GitWorld {
  fx: StackFixture;
  h: AgentHarness;
  server: GitHttpServer;
  /** The bare repository the server serves (the tests push straight into it: never through the server). */
  bare: string;
  device: string;
  /** Writes the fixture, signs it (unless `sign: false`), commits and pushes to main; returns the commit. */
  push(message: string, opts?: { sign?: boolean }): Promise<string>;
  start(args?: string[]): AgentProcess;
  /** This device's line of `commit`'s note on the server. */
  note(commit: string): Promise<{ state: string; description: string } | undefined>;
  /** Every status of `commit` the server ever received from this device, oldest first (the notes ref's log). */
  noted(commit: string): Promise<string[]>;
  /** Waits until the note of `commit` says `state`. */
  noteSays(commit: string, state: string, deadlineMs?: number): Promise<{ state: string; description: string }>;
}

async function withGitWorld(components: ComponentSpec[], body: (w: GitWorld) => Promise<void>): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'keystone-outcomes-'));
  const server = await startGitHttpServer({ root: join(root, 'srv') });
  const bare = server.createRepository('fleet', 'main');
  const fx = await stackFixture({ signed: true, components: () => components });
  const h = new AgentHarness();
  const device = 'edge-1';
  const context = `keystone/${device}`;
  try {
    await git(fx.dir, 'init', '--quiet', '--initial-branch=main');
    const w: GitWorld = {
      fx,
      h,
      server,
      bare,
      device,
      async push(message, opts = {}) {
        fx.write();
        if (opts.sign !== false) await fx.sign();
        await git(fx.dir, 'add', '-A');
        await git(fx.dir, 'commit', '--quiet', '--allow-empty', '-m', message);
        await git(fx.dir, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
        return git(fx.dir, 'rev-parse', 'HEAD');
      },
      start(args = []) {
        return h.start({
          repo: server.url('fleet'),
          plan: fx.plan,
          trustArgs: fx.trustArgs,
          args: ['--ref', 'main', '--poll', '1s', '--device', device, '--status', 'git-notes', ...args],
        });
      },
      async note(commit) {
        return (await readStatusNotes(bare, commit)).find((l) => l.context === context);
      },
      async noted(commit) {
        let subjects = '';
        try {
          subjects = await git(bare, 'log', '--reverse', '--format=%s', `${DEVICE_NOTES_PREFIX}${device}`);
        } catch {
          return []; // no notes ref yet
        }
        return subjects
          .split('\n')
          .map((s) => /^(\S+): (\S+) ([0-9a-f]{40})$/.exec(s))
          .filter((m) => m !== null && m[1] === context && m[3] === commit)
          .map((m) => m![2]!)
          // Delivery is at least once: a status sent again just after a kill is the same word twice.
          .filter((state, i, all) => i === 0 || all[i - 1] !== state);
      },
      noteSays: (commit, state, deadlineMs = 30_000) =>
        until(
          async () => {
            const l = await w.note(commit);
            return l?.state === state ? l : undefined;
          },
          deadlineMs,
          `${device}'s ${state} note on ${commit.slice(0, 12)}`,
        ),
    };
    await body(w);
  } finally {
    await h.cleanup();
    await server.stop();
    fx.cleanup();
    rmSync(root, { recursive: true, force: true });
  }
}

/** Closes a TCP server the test opened, if it did. */
const closeServer = (s: Server | undefined) => new Promise<void>((r) => (s ? s.close(() => r()) : r()));

// Generous timeouts: the waits inside have their own, tighter deadlines.
describe.concurrent('outcomes across agent restarts (SPEC §5)', { timeout: 120_000 }, () => {
  for (const { how, down } of RESTARTS) {
    it(`directory: a failed revision stays failed after ${how} and a restart; the agent resumes it, writes no new apply, and the component stays unhealthy`, async () => {
      const fx = await stackFixture({ signed: false, components: () => [failing('never')] });
      const h = new AgentHarness();
      try {
        const [port] = (await freePorts(1)) as [number];
        const start = () => h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--listen', `127.0.0.1:${port}`] });
        const rev = await fx.revisionId();
        const first = start();
        await first.waitForLog(is.msgIncludes('apply failed'), 20_000, 0, 'the failed apply');
        const [failed] = appliesOf(h, rev);
        expect(failed).toMatchObject({ revision: rev, outcome: 'failure', failed: [{ name: 'never', reason: 'not healthy within its start budget of 1s' }] });
        expect(h.component('never')?.state).toBe('unhealthy');
        const pid = h.pidsOf().never;

        await down(first);
        const second = start();
        const settled = await resumedOrApplied(second, 'the restarted agent to resume the revision');

        // One finished apply for the revision, the failure it had; nothing after it says success.
        expect(appliesOf(h, rev).map((e) => ({ id: e.id, outcome: e.outcome })), `history after the restart: ${outcomes(h).join(', ')}; the restarted agent said "${settled.msg}"`).toEqual([
          { id: failed!.id, outcome: 'failure' },
        ]);
        expect(h.history().filter((e) => outcomeOf(e) === 'success'), 'no success row').toEqual([]);
        expect(settled.msg).toMatch(new RegExp(`^${RESUMED}`));

        // The adopted instance was probed, not assumed healthy: still unhealthy, said so as of the restart, not restarted.
        const checked = await second.waitForLog(is.msg('adopted instances checked'), 15_000, 0, 'the health check of the adopted instances');
        expect(checked).toMatchObject({ healthy: [], unhealthy: ['never'] });
        expect(h.component('never')).toMatchObject({ state: 'unhealthy', reason: expect.stringContaining('after the agent restarted') });
        expect(h.pidsOf().never).toBe(pid);
        expect(appliesOf(h, rev)).toHaveLength(1);

        // As keystonectl shows it.
        await second.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the HTTP API');
        const status = await runCtl(['status', '--json', '--agent', `127.0.0.1:${port}`, '--state-dir', h.stateDir], fx.dir);
        expect(status.code, status.stderr).toBe(0);
        const view = JSON.parse(status.stdout) as { components: Array<{ name: string; state: string }> };
        expect(view.components.find((c) => c.name === 'never')?.state).toBe('unhealthy');
        const history = await runCtl(['history', '--json', '--agent', `127.0.0.1:${port}`, '--state-dir', h.stateDir], fx.dir);
        expect(history.code, history.stderr).toBe(0);
        expect(historyEntries(JSON.parse(history.stdout)).filter((e) => e.revision === rev).map((e) => e.outcome)).toEqual(['failure']);
      } finally {
        await h.cleanup();
        fx.cleanup();
      }
    });
  }

  for (const { how, down } of RESTARTS) {
    it(`git: after ${how} and a restart the commit's note still says failure, and no success was ever enqueued or delivered for it`, async () => {
      await withGitWorld([failing('never')], async (w) => {
        const c = await w.push('a component that never gets healthy');
        const first = w.start();
        await w.noteSays(c, 'failure');
        await outboxDelivered(w.h, c);
        expect(appliesOf(w.h, c).map((e) => e.outcome)).toEqual(['failure']);

        await down(first);
        const second = w.start();
        const settled = await resumedOrApplied(second, `the restarted agent to resume ${c.slice(0, 12)}`);
        const rows = await outboxDelivered(w.h, c);

        expect(rows.map((r) => r.state), `statuses enqueued for the commit; the restarted agent said "${settled.msg}"`).not.toContain('success');
        expect(appliesOf(w.h, c).map((e) => e.outcome), `history: ${outcomes(w.h, c).join(', ')}`).toEqual(['failure']);
        expect((await w.note(c))?.state).toBe('failure');
        expect(await w.noted(c), 'every status the server received for the commit').not.toContain('success');
        // No new report either: the restart resumed, it did not apply.
        expect(rows.map((r) => r.state)).toEqual(['pending', 'failure']);
        expect(settled.msg).toMatch(new RegExp(`^${RESUMED}`));
        expect(w.h.component('never')?.state).toBe('unhealthy');
      });
    });
  }

  it('a recovery is its own event: the component gets healthy by itself → a `recovered` row after the failure; the note stays failure, and a restart changes neither', async () => {
    const [port] = (await freePorts(1)) as [number];
    let listener: Server | undefined;
    await withGitWorld([failing('late', '1.0.0', `tcp://127.0.0.1:${port}`)], async (w) => {
      try {
        const c = await w.push('a component that gets healthy only later');
        const first = w.start();
        await w.noteSays(c, 'failure');
        const [failed] = appliesOf(w.h, c);
        expect(failed).toMatchObject({ outcome: 'failure' });

        // Now its check passes: the health watch sees it.
        listener = createServer((s) => s.end());
        await new Promise<void>((r) => listener!.listen(port, '127.0.0.1', r));
        const mark = first.mark();
        await until(() => w.h.component('late')?.state === 'running', 15_000, 'late running once its check passes');
        const recovered = await until(
          () => w.h.history().find((e) => e.revision === c && outcomeOf(e) === 'recovered'),
          10_000,
          `a recovered history row for ${c.slice(0, 12)} (history: ${outcomes(w.h, c).join(', ')})`,
        );
        expect(recovered.id).toBeGreaterThan(failed!.id);
        expect(recovered.finishedAt).toBeDefined();
        const said = await first.waitForLog(startsWith('recovered: '), 5_000, mark, 'the recovered log line');
        expect(said).toMatchObject({ module: 'agent' });

        // The failed row stays; no success anywhere; the commit's report is still failure.
        expect(appliesOf(w.h, c).map((e) => e.outcome)).toEqual(['failure']);
        const rows = await outboxDelivered(w.h, c);
        expect(rows.map((r) => r.state)).toEqual(['pending', 'failure']);
        expect((await w.note(c))?.state).toBe('failure');

        // A restart of a recovered device: the adopted instance is healthy, and that is not a second recovery or a success.
        await first.stop();
        const second = w.start();
        await resumedOrApplied(second, 'the restarted agent to resume the commit');
        await second.waitForLog(is.msg('adopted instances checked'), 15_000, 0, 'the health check of the adopted instances');
        await until(() => w.h.component('late')?.state === 'running', 10_000, 'late running after the restart');
        expect(w.h.history().filter((e) => e.revision === c).reverse().map(outcomeOf), `history: ${outcomes(w.h, c).join(', ')}`).toEqual(['failure', 'recovered']);
        expect((await outboxDelivered(w.h, c)).map((r) => r.state)).toEqual(['pending', 'failure']);
        expect((await w.note(c))?.state).toBe('failure');
        expect(await w.noted(c)).not.toContain('success');
      } finally {
        await closeServer(listener);
      }
    });
  });

  for (const { how, down } of RESTARTS) {
    it(`--on-failure rollback: B failed and the device went back to A; after ${how} and a restart B is not applied again and A runs on`, async () => {
      await withGitWorld([sleeper('a')], async (w) => {
        const a = await w.push('A: good');
        const first = w.start(['--on-failure', 'rollback']);
        await w.noteSays(a, 'success');

        w.fx.components = [failing('a', '2.0.0')];
        const b = await w.push('B: never healthy');
        await w.noteSays(b, 'failure');
        await until(() => w.h.appliedRevision()?.id === a && w.h.component('a')?.state === 'running' && w.h.component('a')?.version === '1.0.0', 20_000, 'the rollback to A');
        await outboxDelivered(w.h, b);
        const pidA = w.h.pidsOf().a;
        const before = outboxOf(w.h, b).length;
        expect(appliesOf(w.h, b).map((e) => e.outcome)).toEqual(['failure']);

        await down(first);
        const second = w.start(['--on-failure', 'rollback']);
        // The tip is B: the restarted agent looks at it and says it failed here before (today's code applies it again).
        const seen = await second.waitForLog(
          (l) => startsWith(FAILED_BEFORE)(l) || (l.msg === 'reconcile plan' && l.revision === b),
          30_000,
          0,
          `the restarted agent to look at B (${b.slice(0, 12)})`,
        );
        // More looks at the branch (each look is a protocol v2 ls-refs, a POST to git-upload-pack; a fetch is one more):
        // B, offered again at each, is still not applied.
        const from = w.server.requests.length;
        const looks = () => w.server.requests.slice(from).filter((r: ServedRequest) => r.method === 'POST' && r.path.endsWith('/git-upload-pack')).length;
        await until(() => looks() >= 3 || undefined, 20_000, 'three more looks at the branch');

        expect(appliesOf(w.h, b).map((e) => e.outcome), `B's applies; history: ${outcomes(w.h).join(', ')}; the restarted agent said "${seen.msg}"`).toEqual(['failure']);
        expect(second.lines((l) => l.msg === 'reconcile plan' && l.revision === b).map((l) => l.msg), 'B reconciled after the restart').toEqual([]);
        expect(seen.msg).toMatch(new RegExp(`^${FAILED_BEFORE}`));
        // The device runs A, the same instance.
        await until(() => w.h.component('a')?.state === 'running' || undefined, 15_000, 'a running');
        expect(w.h.appliedRevision()?.id).toBe(a);
        expect(w.h.component('a')?.version).toBe('1.0.0');
        expect(w.h.pidsOf().a).toBe(pidA);
        // B's report is unchanged: nothing but its failure was enqueued for it since, its note still says failure.
        expect(outboxOf(w.h, b).slice(before).map((r) => r.state).filter((s) => s !== 'failure'), 'statuses of B enqueued after the restart').toEqual([]);
        expect((await w.note(b))?.state).toBe('failure');
        expect(await w.noted(b)).not.toContain('success');
        expect((await w.note(a))?.state).toBe('success');
      });
    });
  }

  it('a commit refused after a restart (an unsigned edit pushed while the agent was down): refused as error, the device keeps what it ran, the earlier failure stands', async () => {
    await withGitWorld([failing('never')], async (w) => {
      const f = await w.push('a component that never gets healthy');
      const first = w.start();
      await w.noteSays(f, 'failure');
      await outboxDelivered(w.h, f);
      const pid = w.h.pidsOf().never;
      await first.kill9();

      // While the agent is down: an edit without a new signature (SHA256SUMS no longer matches).
      w.fx.bumpVersion('never', '1.0.1');
      const refused = await w.push('an unsigned edit', { sign: false });

      const second = w.start();
      await w.noteSays(refused, 'error');
      expect(w.h.history().find((e) => e.revision === refused)).toMatchObject({ outcome: 'rejected', summary: expect.stringMatching(/^KS_DIGEST_MISMATCH/) });
      // Nothing valid came: the agent goes on with what it ran (it resumes it; today's code applies it again).
      const settled = await resumedOrApplied(second, `the restarted agent to go on with ${f.slice(0, 12)}`, 0);
      const rows = await outboxDelivered(w.h, f);

      expect(rows.map((r) => r.state), `statuses enqueued for the earlier commit; the restarted agent said "${settled.msg}"`).toEqual(['pending', 'failure']);
      expect(appliesOf(w.h, f).map((e) => e.outcome), `history: ${outcomes(w.h).join(', ')}`).toEqual(['failure']);
      expect((await w.note(f))?.state).toBe('failure');
      expect(await w.noted(f)).not.toContain('success');
      expect(w.h.appliedRevision()?.id).toBe(f);
      expect(w.h.component('never')).toMatchObject({ state: 'unhealthy', version: '1.0.0' });
      expect(w.h.pidsOf().never).toBe(pid);
    });
  });

  for (const { how, down } of RESTARTS) {
    it(`the outbox replays after ${how} and a restart: the failure undelivered while the server refused pushes arrives as failure, and nothing says success`, async () => {
      await withGitWorld([failing('never')], async (w) => {
        // Every push to the server is refused (a 503) until the test clears this; fetches are served.
        const isPush = (r: ServedRequest) => r.path.endsWith('/git-receive-pack') || r.query.includes('service=git-receive-pack');
        w.server.cannedAnswers.push(...Array.from({ length: 1000 }, () => ({ status: 503, when: isPush })));
        const c = await w.push('a component that never gets healthy');
        const first = w.start();
        await first.waitForLog(is.msgIncludes('apply failed'), 30_000, 0, 'the failed apply');
        await until(() => outboxOf(w.h, c).some((r) => r.state === 'failure' && r.nextAttemptAt !== null) || undefined, 10_000, 'the failure waiting in the outbox');
        await until(() => w.server.requests.some((r) => isPush(r) && r.status === 503) || undefined, 15_000, 'a refused push of a status');
        expect(await w.note(c), 'nothing delivered yet').toBeUndefined();

        await down(first);
        w.server.cannedAnswers.splice(0);
        const second = w.start();
        const settled = await resumedOrApplied(second, `the restarted agent to resume ${c.slice(0, 12)}`);
        const rows = await outboxDelivered(w.h, c, 45_000);

        expect(rows.map((r) => r.state), `statuses enqueued for the commit; the restarted agent said "${settled.msg}"`).toEqual(['pending', 'failure']);
        expect((await w.note(c))?.state).toBe('failure');
        expect(await w.noted(c), 'every status the server received for the commit').toEqual(['pending', 'failure']);
        expect(appliesOf(w.h, c).map((e) => e.outcome), `history: ${outcomes(w.h, c).join(', ')}`).toEqual(['failure']);
      });
    });
  }
});
