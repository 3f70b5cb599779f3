// When a GitSource looks, against a real Git smart-HTTP server: a 429/503 with Retry-After is waited out before the
// next scheduled look (the server answers so on cue through its test hook, then serves normally), and a device's
// first look after start is at its offset in the poll interval. Timers and the clock are injected: the test fires
// the scheduled look itself and reads the delay it was scheduled with.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Revision } from '../../src/source/directory-source.js';
import { firstLookDelayMs } from '../../src/git/git-poll-delay.js';
import { GitSource, type SourceTimers } from '../../src/source/git-source.js';
import type { GitSourceOptions } from '../../src/source/git-source-options.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const git = async (...args: string[]) => (await run('git', args, { env: GIT_ENV })).stdout.trim();
const T0 = Date.parse('2026-12-01T12:00:00Z');
const POLL = 60_000;

/** Timers that only record: the test fires the pending one. */
class ManualTimers implements SourceTimers {
  pending?: { fn: () => void; ms: number; id: number };
  private n = 0;
  setTimeout(fn: () => void, ms: number): unknown {
    this.pending = { fn, ms, id: ++this.n };
    return this.n;
  }
  clearTimeout(handle: unknown): void {
    if (this.pending?.id === handle) this.pending = undefined;
  }
  /** The delay of the scheduled look. */
  get ms(): number {
    if (!this.pending) throw new Error('no look scheduled');
    return this.pending.ms;
  }
  fire(): void {
    const p = this.pending;
    if (!p) throw new Error('no look scheduled');
    this.pending = undefined;
    p.fn();
  }
}

async function until(pred: () => boolean, what: string, deadlineMs = 10_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let root: string;
let server: GitHttpServer;
const sources: GitSource[] = [];

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-gitsched-'));
  server = await startGitHttpServer({ root: join(root, 'server') });
});

afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

/** A server repository with one commit on main, and a source following it with manual timers and a fixed clock. */
async function fixture(opts: Partial<GitSourceOptions> = {}) {
  const bare = server.createRepository('fleet');
  const ws = join(root, 'ws');
  await git('init', '--quiet', '--initial-branch=main', ws);
  mkdirSync(join(ws, 'plans'), { recursive: true });
  writeFileSync(join(ws, 'plans/plan.toml'), '# one\n');
  await git('-C', ws, 'add', '-A');
  await git('-C', ws, 'commit', '--quiet', '-m', 'one');
  await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
  const commit = await git('-C', ws, 'rev-parse', 'HEAD');
  const timers = new ManualTimers();
  const revisions: Revision[] = [];
  const errors: Array<Error & { code?: string }> = [];
  const source = new GitSource({
    repo: server.url('fleet'),
    ref: 'main',
    cacheDir: join(root, 'cache'),
    pollMs: POLL,
    retryBaseMs: 1000,
    random: () => 0.5,
    now: () => T0,
    timers,
    allowHistoryRewrite: false,
    lastAppliedCommit: () => revisions.at(-1)?.id,
    onRevision: (r) => revisions.push(r),
    onRejected: () => undefined,
    onError: (e) => errors.push(e),
    ...opts,
  });
  sources.push(source);
  return { source, timers, revisions, errors, commit };
}

describe('a server that answers 429 or 503', () => {
  it('429 with Retry-After in seconds: the next look waits that long, then deploys', async () => {
    const f = await fixture();
    server.cannedAnswers.push({ status: 429, headers: { 'retry-after': '120' } });
    await f.source.start();
    expect(f.errors.map((e) => e.code)).toEqual(['KS_GIT_SERVER_BUSY']);
    expect(f.errors[0]!.message).toContain('HTTP 429');
    expect(f.errors[0]!.message).toContain('next look in 120 s');
    expect(f.revisions).toEqual([]);
    // Without Retry-After the first retry would come after at most retryBaseMs (1 s).
    expect(f.timers.ms).toBe(120_000);
    expect(f.source.status.nextLookAt).toBe(T0 + 120_000);
    f.timers.fire();
    await until(() => f.revisions.length > 0, 'the commit offered after the wait');
    expect(f.revisions.map((r) => r.id)).toEqual([f.commit]);
    expect(f.errors).toHaveLength(1); // said once, by the look that was refused
    await until(() => f.timers.pending !== undefined, 'the next poll scheduled');
    expect(f.timers.ms).toBe(POLL); // back to the ordinary poll (± jitter, 0 at random 0.5)
  });

  it('503 with Retry-After as an HTTP date: waits until then', async () => {
    const f = await fixture();
    server.cannedAnswers.push({ status: 503, headers: { 'retry-after': new Date(T0 + 300_000).toUTCString() } });
    await f.source.start();
    expect(f.errors.map((e) => e.code)).toEqual(['KS_GIT_SERVER_BUSY']);
    expect(f.errors[0]!.message).toContain('HTTP 503');
    expect(f.timers.ms).toBe(300_000);
    f.timers.fire();
    await until(() => f.revisions.length > 0, 'the commit offered after the wait');
    expect(f.revisions.map((r) => r.id)).toEqual([f.commit]);
  });

  it('a 429 on the fetch itself (the ls-refs look went through) is waited out the same way', async () => {
    const f = await fixture();
    // isomorphic-git fetches with protocol v1: the one request without the git-protocol header.
    server.cannedAnswers.push({ status: 429, headers: { 'retry-after': '90' }, when: (r) => r.protocol === undefined });
    await f.source.start();
    expect(f.errors.map((e) => e.code)).toEqual(['KS_GIT_SERVER_BUSY']);
    expect(f.errors[0]!.message).toContain('while fetching');
    expect(f.timers.ms).toBe(90_000);
    f.timers.fire();
    await until(() => f.revisions.length > 0, 'the commit offered after the wait');
    expect(f.revisions.map((r) => r.id)).toEqual([f.commit]);
  });

  it('caps a Retry-After far in the future at ten poll intervals', async () => {
    const f = await fixture();
    server.cannedAnswers.push({ status: 429, headers: { 'retry-after': '86400' } });
    await f.source.start();
    expect(f.timers.ms).toBe(10 * POLL);
    expect(f.errors[0]!.message).toMatch(/next look in 600 s \(it asked for 86400 s; capped\)/);
  });

  it('without Retry-After: the ordinary backoff', async () => {
    const f = await fixture();
    server.cannedAnswers.push({ status: 503 });
    await f.source.start();
    expect(f.errors.map((e) => e.code)).toEqual(['KS_GIT_SERVER_BUSY']);
    expect(f.timers.ms).toBeLessThanOrEqual(1000);
    f.timers.fire();
    await until(() => f.revisions.length > 0, 'the commit offered at the retry');
  });
});

describe('the first look after start, with a device name', () => {
  it('a device that runs a commit already waits for its offset in the poll interval', async () => {
    const f = await fixture({ device: 'edge-7', lastAppliedCommit: () => 'c'.repeat(40) });
    const from = server.requests.length;
    await f.source.start();
    expect(server.requests.length).toBe(from); // nothing asked of the server yet
    expect(f.timers.ms).toBe(firstLookDelayMs({ device: 'edge-7', pollMs: POLL, running: true }, () => 0.5));
    f.timers.fire();
    // The tip is seen (and refused: it does not descend from the made-up running commit, which does not matter here).
    await until(() => f.source.status.tip === f.commit, 'the first look');
    expect(server.requests.length).toBeGreaterThan(from);
  });

  it('a device that runs nothing from Git yet looks at once', async () => {
    const f = await fixture({ device: 'edge-7' });
    await f.source.start();
    expect(f.revisions.map((r) => r.id)).toEqual([f.commit]);
  });
});
