// One device following one branch of a real Git smart-HTTP server (`git http-backend`, git-http-server.ts) with its
// Git-notes reporter on, and what the device said about each commit: its history rows, its status outbox (read-only
// sqlite), the note of the commit on the server, and the notes ref's own log (one notes commit per delivered status,
// subject `keystone/<device>: <state> <commit>`): everything the device ever said, not only its last word.
//
// Shared by the tests of "outcomes across restarts" (issue 27, SPEC §5): test/e2e/outcomes-restart.e2e.test.ts and
// test/agent/outcome-edges/. Each world has its own fixture, state directory, agent and server, so tests using it run
// concurrently.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Sqlite from 'better-sqlite3';
import { DEVICE_NOTES_PREFIX } from '../../src/report/device-notes-ref.js';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import { STATE_DB_FILE } from '../../src/store/state-store.js';
import { AgentHarness, type AgentProcess, type LogLine } from './agent-harness.js';
import { until } from './composite-fixture.js';
import { GIT_ENV } from './git-env.js';
import { startGitHttpServer, type GitHttpServer } from './git-http-server.js';
import { stackFixture, type ComponentSpec, type StackFixture } from './stack-fixture.js';

const run = promisify(execFile);
/** Async on purpose: the Git server answers from this very process. */
export const git = async (cwd: string, ...args: string[]) =>
  (await run('git', ['-C', cwd, ...args], { env: GIT_ENV })).stdout.trim();

/** Runs, but its check never passes: nothing listens on port 1. Start budget 200 ms × 5 = 1 s. */
export function failing(name: string, version = '1.0.0', check = 'tcp://127.0.0.1:1'): ComponentSpec {
  return {
    name,
    version,
    command: 'sleep',
    args: ['1000'],
    health: { check, interval: '200ms', timeout: '150ms', failureThreshold: 5 },
  };
}

/** The two ways an agent goes away: a stop (systemctl restart, an upgrade) and a power cut. */
export const RESTARTS = [
  { how: 'SIGTERM', down: (a: AgentProcess) => a.stop() },
  { how: 'kill -9', down: (a: AgentProcess) => a.kill9() },
] as const;

/** What a restarted agent says when it takes up the revision it runs again (outcomes.ts, resumed()). */
export const RESUMED = 'resumed the revision applied last';
/** What an agent says of a commit offered again that failed here before (take-revision.ts). */
export const FAILED_BEFORE = 'failed on this device before';
export const startsWith = (text: string) => (l: LogLine) => typeof l.msg === 'string' && l.msg.startsWith(text);

/** The apply rows of `rev` (finished or not), oldest first: not the refusals, not the recoveries. */
export const appliesOf = (h: AgentHarness, rev: string) =>
  h
    .history()
    .filter((e) => e.revision === rev && e.outcome !== 'rejected' && e.outcome !== 'recovered')
    .reverse();
/** The history (of `rev`, or all of it), oldest first, as `<commit> <outcome>` lines for an assertion's message. */
export const outcomes = (h: AgentHarness, rev?: string) =>
  h
    .history()
    .filter((e) => rev === undefined || e.revision === rev)
    .reverse()
    .map((e) => `${e.revision.slice(0, 12)} ${e.outcome ?? 'unfinished'}`);

export interface OutboxRow {
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
export function outboxOf(h: AgentHarness, commit: string): OutboxRow[] {
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
export async function outboxDelivered(h: AgentHarness, commit: string, deadlineMs = 30_000): Promise<OutboxRow[]> {
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
    const rows = outboxOf(h, commit).map(
      (r) =>
        `${r.state}${r.deliveredAt !== null ? ' delivered' : r.nextAttemptAt !== null ? ` open (${r.lastError ?? ''})` : ` given up (${r.lastError ?? ''})`}`,
    );
    throw new Error(`${(e as Error).message}; outbox: ${rows.join(', ')}`);
  }
}

/** One device following one branch of a real Git server, with its notes reporter on. */
export interface GitWorld {
  fx: StackFixture;
  h: AgentHarness;
  server: GitHttpServer;
  /** The bare repository the server serves (the tests push straight into it: never through the server). */
  bare: string;
  device: string;
  /**
   * Writes the fixture, signs it (unless `sign: false`; `signArgs` such as `['--ref', 'pr']`), commits and pushes to
   * main; returns the commit.
   */
  push(message: string, opts?: { sign?: boolean; signArgs?: string[] }): Promise<string>;
  start(args?: string[]): AgentProcess;
  /** This device's line of `commit`'s note on the server. */
  note(commit: string): Promise<{ state: string; description: string } | undefined>;
  /** Every status of `commit` the server ever received from this device, oldest first (the notes ref's log). */
  noted(commit: string): Promise<string[]>;
  /** Waits until the note of `commit` says `state`. */
  noteSays(commit: string, state: string, deadlineMs?: number): Promise<{ state: string; description: string }>;
}

/** Runs `body` in a new Git world of `components` (signed), and removes it (agents, processes, server, files) after. */
export async function withGitWorld(components: ComponentSpec[], body: (w: GitWorld) => Promise<void>): Promise<void> {
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
        if (opts.sign !== false) await fx.sign(opts.signArgs);
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
        return (
          subjects
            .split('\n')
            .map((s) => /^(\S+): (\S+) ([0-9a-f]{40})$/.exec(s))
            .filter((m) => m !== null && m[1] === context && m[3] === commit)
            .map((m) => m![2]!)
            // Delivery is at least once: a status sent again just after a kill is the same word twice.
            .filter((state, i, all) => i === 0 || all[i - 1] !== state)
        );
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
export const closeServer = (s: Server | undefined) => new Promise<void>((r) => (s ? s.close(() => r()) : r()));
