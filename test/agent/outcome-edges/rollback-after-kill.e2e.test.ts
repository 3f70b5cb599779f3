// Review repro F9 (helpers copied from test/agent/outcomes-restart.e2e.test.ts)
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
import { historyEntries } from '../../../src/cli/commands/history.js';
import { DEVICE_NOTES_PREFIX } from '../../../src/status/device-notes-ref.js';
import { readStatusNotes } from '../../../src/status/status-notes-read.js';
import { STATE_DB_FILE, type HistoryEntry } from '../../../src/store/state-store.js';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../../support/agent-harness.js';
import { runCtl } from '../../support/cli-run.js';
import { until } from '../../support/composite-fixture.js';
import { GIT_ENV } from '../../support/git-env.js';
import { startGitHttpServer, type GitHttpServer, type ServedRequest } from '../../support/git-http-server.js';
import { freePorts, sleeper, stackFixture, type ComponentSpec, type StackFixture } from '../../support/stack-fixture.js';

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

// F9: a restart that lands between B's failure row and the beginning of the rollback's apply (the rollback is offered
// asynchronously; a SIGTERM drops it from the queue) leaves the device on B for good: B is resumed ("its outcome
// stands"), and nothing asks the failure listener again.
describe('review F9', { timeout: 180_000 }, () => {
  for (const how of ['SIGTERM', 'kill -9'] as const) {
    it(`--on-failure rollback: ${how} just after B failed: the rollback never happens`, async () => {
      await withGitWorld([sleeper('a')], async (w) => {
        const a = await w.push('A: good');
        const first = w.start(['--on-failure', 'rollback']);
        await w.noteSays(a, 'success');
        w.fx.components = [failing('a', '2.0.0')];
        const b = await w.push('B: never healthy');
        await first.waitForLog(is.msgIncludes('rolling back to the last commit that succeeded'), 30_000);
        if (how === 'SIGTERM') await first.stop();
        else await first.kill9();
        console.log('first agent, after the failure:', first.lines((l) => l.module === 'agent' && l.t >= 0).slice(-6).map((l) => `${l.msg} ${String(l.revision ?? '').slice(0, 8)}`));
        const second = w.start(['--on-failure', 'rollback']);
        await second.waitForLog((l) => startsWith(RESUMED)(l) || startsWith(FAILED_BEFORE)(l), 30_000);
        await new Promise((r) => setTimeout(r, 6000));
        console.log(how, 'history:', outcomes(w.h).join(', '), '| applied:', w.h.appliedRevision()?.id === b ? 'B' : 'A', '| a:', w.h.component('a')?.version, w.h.component('a')?.state);
        expect(w.h.appliedRevision()?.id, 'the device went back to A').toBe(a);
      });
    });
  }
});
