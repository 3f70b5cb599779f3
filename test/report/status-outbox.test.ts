// The status outbox with a real SQLite state store and real reporters (the GitHub contract server, and Git notes on
// git http-backend). Time and timers are injected: a retry happens when the test moves the clock and fires the due
// timers, never after a sleep.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Sqlite from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { statusContext, type CommitStatus } from '../../src/report/commit-status.js';
import { GitHubStatusReporter } from '../../src/report/github-status-reporter.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { backoffDelay, StatusOutbox } from '../../src/report/status-outbox.js';
import type { OutboxLog, OutboxTimers, StatusOutboxOptions } from '../../src/report/status-outbox-options.js';
import { openStateStore, type StateStore } from '../../src/store/state-store.js';
import { startGitHubContractServer, type GitHubContractServer } from '../support/github-contract-server.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

const TOKEN = 'outbox-token-42';
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

/** A clock and a timer queue the test drives by hand. */
class ManualTime implements OutboxTimers {
  t = 1_000_000;
  private seq = 0;
  readonly timers = new Map<number, { at: number; fn: () => void }>();
  now = (): number => this.t;
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers.delete(h as number);
  }
  /** The earliest armed timer's due time. */
  next(): number | undefined {
    const ats = [...this.timers.values()].map((x) => x.at);
    return ats.length ? Math.min(...ats) : undefined;
  }
  /** Moves the clock to the earliest timer and fires what is due then. */
  advance(): void {
    const at = this.next();
    if (at === undefined) throw new Error('no timer armed');
    this.t = Math.max(this.t, at);
    for (const [id, x] of [...this.timers]) {
      if (x.at > this.t) continue;
      this.timers.delete(id);
      x.fn();
    }
  }
}

let gh: GitHubContractServer;
let gitRoot: string;
let gitServer: GitHttpServer;
const dirs: string[] = [];
const cleanup: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  gh = await startGitHubContractServer({ token: TOKEN });
  gitRoot = mkdtempSync(join(tmpdir(), 'keystone-outbox-git-'));
  gitServer = await startGitHttpServer({ root: gitRoot, token: TOKEN });
});
afterAll(async () => {
  await gh.stop();
  await gitServer.stop();
  rmSync(gitRoot, { recursive: true, force: true });
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  if (!gh.running) await gh.start();
  gh.reset();
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'keystone-outbox-'));
  dirs.push(d);
  return d;
}

function store(dir: string): StateStore {
  const s = openStateStore(dir);
  cleanup.push(() => s.close());
  return s;
}

function github(over: Partial<ConstructorParameters<typeof GitHubStatusReporter>[0]> = {}): GitHubStatusReporter {
  // Pacing off: the reporter's own clock is the real one, and these tests are about the outbox's time.
  return new GitHubStatusReporter({
    apiBase: gh.apiBase,
    owner: 'acme',
    repo: 'fleet',
    token: TOKEN,
    minIntervalMs: 0,
    ...over,
  });
}

function outbox(
  opts: Partial<StatusOutboxOptions> & Pick<StatusOutboxOptions, 'store'>,
  time: ManualTime,
): StatusOutbox {
  const o = new StatusOutbox({
    reporters: [github()],
    now: time.now,
    random: () => 0,
    timers: time,
    initialBackoffMs: 1_000,
    maxBackoffMs: 60_000,
    ...opts,
  });
  cleanup.push(() => o.close());
  return o;
}

function status(commit: string, state: CommitStatus['state'], at: number, description = `${state} now`): CommitStatus {
  return { commit, state, description, context: statusContext('dev-a'), at };
}

function memoryLog(): OutboxLog & { lines: { level: string; msg: string; obj: object }[] } {
  const lines: { level: string; msg: string; obj: object }[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, msg, obj });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

const states = (commit: string) => gh.list('acme', 'fleet', commit).map((s) => s.state);

describe('backoffDelay', () => {
  it('doubles per attempt up to the cap, with half of it jittered', () => {
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, 0, 1_000, 5_000))).toEqual([500, 1_000, 2_000, 2_500]);
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, 0.999999, 1_000, 5_000))).toEqual([1_000, 2_000, 4_000, 5_000]);
  });
});

describe('StatusOutbox', () => {
  it('delivers per commit in order: a success never overtakes its pending, other commits are not held up', async () => {
    const time = new ManualTime();
    const s = store(tempDir());
    const o = outbox({ store: s }, time);
    gh.failNext = 1; // the first delivery (A pending) meets a 503
    o.enqueue(status(A, 'pending', time.t));
    o.enqueue(status(A, 'success', time.t));
    o.enqueue(status(B, 'pending', time.t));
    await o.idle();
    expect(states(A)).toEqual([]); // A's success waits behind its pending
    expect(states(B)).toEqual(['pending']);
    const [head] = s.outboxHeads();
    expect(head).toMatchObject({ commit: A, state: 'pending', attempts: 1, nextAttemptAt: time.t + 500 });
    expect(head?.lastError).toMatch(/^KS_STATUS_SERVER_ERROR: .*HTTP 503/);
    expect(time.next()).toBe(time.t + 500);

    time.advance();
    await o.idle();
    expect(states(A)).toEqual(['success', 'pending']); // newest first
    expect(o.pending()).toBe(0);
    expect(o.counts()).toEqual({ open: 0, delivered: 3, failed: 0 });
  });

  it('retries with growing backoff while the server is down and delivers once it is back', async () => {
    const time = new ManualTime();
    const s = store(tempDir());
    const o = outbox({ store: s }, time);
    await gh.stop();
    const [id] = o.enqueue(status(A, 'pending', time.t));
    await o.idle();
    const start = time.t;
    expect(s.outboxEntry(id!)).toMatchObject({ attempts: 1, nextAttemptAt: start + 500 });
    expect(s.outboxEntry(id!)?.lastError).toMatch(/^KS_STATUS_UNREACHABLE/);
    time.advance();
    await o.idle();
    expect(s.outboxEntry(id!)).toMatchObject({ attempts: 2, nextAttemptAt: start + 500 + 1_000 });
    time.advance();
    await o.idle();
    expect(s.outboxEntry(id!)).toMatchObject({ attempts: 3, nextAttemptAt: start + 500 + 1_000 + 2_000 });

    await gh.start();
    time.advance();
    await o.idle();
    expect(s.outboxEntry(id!)).toMatchObject({ attempts: 4, deliveredAt: time.t });
    expect(s.outboxEntry(id!)?.nextAttemptAt).toBeUndefined();
    expect(states(A)).toEqual(['pending']);
    expect(time.next()).toBeUndefined(); // nothing left to wake up for
  });

  it('survives closing and reopening the state store: the new instance delivers what the old one could not', async () => {
    const dir = tempDir();
    const time = new ManualTime();
    gitServer.createRepository('restart');
    const notesUrl = gitServer.url('restart');
    const notes = () => new GitNotesReporter({ repository: notesUrl, cacheDir: join(dir, 'notes.git'), token: TOKEN });
    const first = openStateStore(dir);
    const o1 = new StatusOutbox({
      store: first,
      reporters: [github(), notes()],
      now: time.now,
      random: () => 0.5,
      timers: time,
    });
    await gh.stop();
    o1.enqueue(status(A, 'pending', time.t));
    o1.enqueue(status(A, 'success', time.t + 1));
    await o1.idle();
    // Git notes were delivered, GitHub is down: its two rows stay, written before any attempt.
    expect(o1.counts()).toEqual({ open: 2, delivered: 2, failed: 0 });
    await o1.close();
    first.close();

    await gh.start();
    const second = store(dir);
    const o2 = outbox({ store: second, reporters: [github(), notes()] }, time);
    expect(o2.pending()).toBe(2);
    o2.start();
    await o2.flush(); // the reloaded rows are still in backoff: flush delivers them now
    expect(states(A)).toEqual(['success', 'pending']);
    expect(o2.counts()).toEqual({ open: 0, delivered: 4, failed: 0 });
    // The notes reporter was not asked again: its rows were delivered by the first instance.
    const clone = tempDir();
    const run = promisify(execFile);
    await run('git', [
      '-c',
      `http.extraHeader=Authorization: Bearer ${TOKEN}`,
      'clone',
      '--quiet',
      '--bare',
      notesUrl,
      clone,
    ]);
    await run('git', [
      '-C',
      clone,
      '-c',
      `http.extraHeader=Authorization: Bearer ${TOKEN}`,
      'fetch',
      '--quiet',
      'origin',
      '+refs/notes/keystone*:refs/notes/keystone*',
    ]);
    const { stdout } = await run('git', ['-C', clone, 'log', '--format=%s', 'refs/notes/keystone-devices/dev-a']);
    expect(stdout.trim().split('\n')).toEqual([`keystone/dev-a: success ${A}`, `keystone/dev-a: pending ${A}`]);
  });

  it('keeps the table bounded: finished rows beyond the retention are deleted, open ones never', async () => {
    const time = new ManualTime();
    const s = store(tempDir());
    const o = outbox({ store: s, retention: 3 }, time);
    const commits = Array.from({ length: 8 }, (_, i) => i.toString(16).repeat(40));
    for (const c of commits) o.enqueue(status(c, 'success', time.t));
    await o.idle();
    await gh.stop();
    const [openId] = o.enqueue(status('9'.repeat(40), 'pending', time.t));
    await o.idle();
    const rows = s.outboxEntries({ limit: 100 });
    expect(rows.map((r) => [r.commit[0], r.deliveredAt !== undefined])).toEqual([
      ['9', false],
      ['7', true],
      ['6', true],
      ['5', true],
    ]);
    expect(rows[0]?.id).toBe(openId);
    expect(commits.every((c) => states(c).length === 1)).toBe(true);
  });

  it('gives up a permanent failure at once (logged, error kept) and does not let it block the next status', async () => {
    const time = new ManualTime();
    const s = store(tempDir());
    const log = memoryLog();
    const o = outbox({ store: s, reporters: [github({ token: 'revoked-token' })], log }, time);
    const [p] = o.enqueue(status(A, 'pending', time.t));
    await o.idle();
    expect(gh.requests.map((r) => r.status)).toEqual([401]);
    expect(s.outboxEntry(p!)).toMatchObject({ attempts: 1 });
    expect(s.outboxEntry(p!)?.lastError).toMatch(/^KS_STATUS_AUTH: .*Bad credentials/);
    expect(s.outboxEntry(p!)?.nextAttemptAt).toBeUndefined();
    o.enqueue(status(A, 'success', time.t));
    await o.idle();
    expect(gh.requests.map((r) => r.status)).toEqual([401, 401]); // the success was tried too, once
    expect(time.next()).toBeUndefined(); // no retry armed
    await o.flush(); // even a forced round leaves given-up rows alone
    expect(gh.requests).toHaveLength(2);
    expect(o.counts()).toEqual({ open: 0, delivered: 0, failed: 2 });
    expect(log.lines.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
      'commit status rejected; not retrying',
      'commit status rejected; not retrying',
    ]);
    expect(JSON.stringify(log.lines)).not.toContain('revoked-token');
  });

  it('a reporter that says "wait" (rate limited) holds all its rows until then, even on flush; another reporter is not held', async () => {
    const time = new ManualTime();
    const s = store(tempDir());
    const other = await startGitHubContractServer({ token: TOKEN });
    cleanup.push(() => other.stop());
    const o = outbox(
      {
        store: s,
        maxBackoffMs: 300_000,
        reporters: [github(), github({ name: 'github-mirror', apiBase: other.apiBase })],
      },
      time,
    );
    const start = time.t;
    gh.rateLimit = { kind: 'secondary', retryAfter: '120' };
    for (const c of [A, B]) o.enqueue(status(c, 'pending', time.t));
    await o.idle();
    expect(gh.requests.map((r) => r.status)).toEqual([403]); // B was not sent to a server that had just said wait
    expect(other.requests.map((r) => r.status)).toEqual([201, 201]);
    const heads = s.outboxHeads().filter((h) => h.reporter === 'github');
    expect(heads.map((h) => [h.commit, h.attempts])).toEqual([
      [A, 1],
      [B, 0],
    ]);
    expect(heads[0]?.lastError).toMatch(/^KS_STATUS_RATE_LIMITED: .*secondary rate limit/);
    expect(time.next()).toBe(start + 120_000);

    // A new status queues behind the hold too, and so does a forced round; the other reporter still delivers.
    o.enqueue(status(A, 'success', time.t));
    await o.flush();
    expect(gh.requests).toHaveLength(1);
    expect(other.requests).toHaveLength(3);

    // Still limited when the hold ends: one request finds that out, and the rest wait again.
    time.advance();
    await o.idle();
    expect(gh.requests.map((r) => r.status)).toEqual([403, 403]);
    expect(time.next()).toBe(start + 240_000);

    gh.rateLimit = undefined;
    time.advance();
    await o.idle();
    expect(states(A)).toEqual(['success', 'pending']);
    expect(states(B)).toEqual(['pending']);
    expect(o.counts()).toEqual({ open: 0, delivered: 6, failed: 0 });
    expect(time.next()).toBeUndefined();
  });

  it('gives up a retryable failure after maxAttempts', async () => {
    const time = new ManualTime();
    const s = store(tempDir());
    const o = outbox({ store: s, maxAttempts: 3 }, time);
    gh.failNext = 100;
    const [id] = o.enqueue(status(A, 'pending', time.t));
    await o.idle();
    time.advance();
    await o.idle();
    time.advance();
    await o.idle();
    expect(time.next()).toBeUndefined();
    expect(gh.requests).toHaveLength(3);
    expect(s.outboxEntry(id!)).toMatchObject({ attempts: 3 });
    expect(o.counts().failed).toBe(1);
  });

  it('the table itself refuses states and shapes the agent does not know (STRICT, CHECK)', () => {
    const dir = tempDir();
    store(dir);
    const db = new Sqlite(join(dir, 'state.db'));
    cleanup.push(() => void db.close());
    const insert =
      db.prepare(`INSERT INTO status_outbox (reporter, "commit", state, description, context, created_at, next_attempt_at, delivered_at, last_error)
                               VALUES ('github', ?, ?, 'd', 'keystone/x', 1, ?, ?, ?)`);
    expect(() => insert.run(A, 'done', 1, null, null)).toThrow(/CHECK/);
    expect(() => insert.run(A, 'success', 1, 2, null)).toThrow(/CHECK/); // delivered yet still scheduled
    expect(() => insert.run(A, 'success', null, null, null)).toThrow(/CHECK/); // finished without saying how
    expect(() => insert.run(A, 'success', 'soon', null, null)).toThrow(/cannot store TEXT value in INTEGER column/);
    expect(insert.run(A, 'success', 1, null, null).changes).toBe(1);
  });

  it('refuses a malformed status before writing anything', () => {
    const time = new ManualTime();
    const s = store(tempDir());
    const o = outbox({ store: s }, time);
    expect(() => o.enqueue(status('ABC', 'pending', time.t))).toThrow(
      expect.objectContaining({ code: 'KS_STATUS_INVALID' }),
    );
    expect(s.outboxEntries({ limit: 10 })).toEqual([]);
  });
});
