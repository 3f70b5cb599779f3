// The Git notes reporter against a real Git smart-HTTP server (git http-backend), read back with the git CLI: what
// another tool or an operator would see. The CLI runs asynchronously: the server lives in this process.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isStatusDeliveryError, statusContext, type CommitStatus } from '../../src/status/commit-status.js';
import { GitNotesReporter } from '../../src/status/git-notes-reporter.js';
import { mergeStatusNote, parseStatusNote } from '../../src/status/status-note.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

const run = promisify(execFile);
const TOKEN = 'notes-secret-token-4711';
const AUTH = ['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`];
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };

let root: string;
let server: GitHttpServer;
const dirs: string[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-notes-srv-'));
  server = await startGitHttpServer({ root, token: TOKEN });
});
afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix = 'keystone-notes-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', [...AUTH, ...args], { cwd, env: GIT_ENV });
  return stdout;
}

/** A remote with one pushed commit, and a clone of it; returns the commit id. */
async function remoteWithCommit(name: string): Promise<{ url: string; clone: string; commit: string }> {
  server.createRepository(name);
  const clone = tempDir('keystone-notes-clone-');
  await git(clone, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(clone, 'plan.toml'), `# ${name}\n`);
  await git(clone, 'add', '.');
  await git(clone, 'commit', '--quiet', '-m', 'first');
  await git(clone, 'remote', 'add', 'origin', server.url(name));
  await git(clone, 'push', '--quiet', 'origin', 'main');
  return { url: server.url(name), clone, commit: (await git(clone, 'rev-parse', 'HEAD')).trim() };
}

/** What `git notes show` says after fetching the notes ref, as an operator would read it. */
async function cliNote(clone: string, commit: string): Promise<string> {
  await git(clone, 'fetch', '--quiet', 'origin', '+refs/notes/keystone:refs/notes/keystone');
  return git(clone, 'notes', '--ref', 'keystone', 'show', commit);
}

function reporter(url: string, device: string, over: Partial<ConstructorParameters<typeof GitNotesReporter>[0]> = {}): GitNotesReporter {
  return new GitNotesReporter({ repository: url, cacheDir: join(tempDir('keystone-notes-cache-'), 'notes.git'), token: TOKEN, ...over, name: `notes-${device}` });
}

function status(commit: string, device: string, state: CommitStatus['state'], description: string, at = Date.UTC(2025, 0, 2, 3, 4, 5)): CommitStatus {
  return { commit, state, description, context: statusContext(device), at };
}

describe('status note text', () => {
  it('replaces only the device own line and keeps lines it does not understand', () => {
    const a = status('a'.repeat(40), 'dev-a', 'pending', 'applying: start api');
    const note = mergeStatusNote('keystone/dev-b success 2025-01-01T00:00:00.000Z applied\nsomething a human wrote\n', a);
    expect(note).toBe(
      'keystone/dev-b success 2025-01-01T00:00:00.000Z applied\nsomething a human wrote\nkeystone/dev-a pending 2025-01-02T03:04:05.000Z applying: start api\n',
    );
    const again = mergeStatusNote(note, { ...a, state: 'success', description: 'applied: 1 component running' });
    expect(parseStatusNote(again).map((l) => [l.context, l.state])).toEqual([
      ['keystone/dev-b', 'success'],
      ['something', 'a'],
      ['keystone/dev-a', 'success'],
    ]);
    expect(again.split('\n')[1]).toBe('something a human wrote');
  });
});

describe('GitNotesReporter against a Git smart-HTTP server', () => {
  it('pushes a note on refs/notes/keystone that the git CLI reads, for a commit the cache never had', async () => {
    const { url, clone, commit } = await remoteWithCommit('one');
    await reporter(url, 'dev-a').deliver(status(commit, 'dev-a', 'pending', 'applying: start api, web'));
    expect(await cliNote(clone, commit)).toBe('keystone/dev-a pending 2025-01-02T03:04:05.000Z applying: start api, web\n');
    // Every request carried the token: the server refuses anything else.
    expect(server.requests.filter((r) => r.path.startsWith('/one.git')).every((r) => r.status !== 401)).toBe(true);
  });

  it('merges two devices into one note, and an update replaces only that device line', async () => {
    const { url, clone, commit } = await remoteWithCommit('two');
    const a = reporter(url, 'dev-a');
    const b = reporter(url, 'dev-b');
    await a.deliver(status(commit, 'dev-a', 'pending', 'applying'));
    await b.deliver(status(commit, 'dev-b', 'pending', 'applying'));
    await a.deliver(status(commit, 'dev-a', 'failure', 'failed: api (health check timed out)', Date.UTC(2025, 0, 2, 3, 5, 0)));
    expect(await cliNote(clone, commit)).toBe(
      'keystone/dev-a failure 2025-01-02T03:05:00.000Z failed: api (health check timed out)\nkeystone/dev-b pending 2025-01-02T03:04:05.000Z applying\n',
    );
    // The notes history is linear: each device built on what the other pushed.
    const log = await git(clone, 'log', '--format=%s', 'refs/notes/keystone');
    expect(log.trim().split('\n')).toEqual([`keystone/dev-a: failure ${commit}`, `keystone/dev-b: pending ${commit}`, `keystone/dev-a: pending ${commit}`]);
  });

  it('keeps both devices when they push at the same time (the loser refetches and retries)', async () => {
    const { url, clone, commit } = await remoteWithCommit('race');
    const devices = ['dev-a', 'dev-b', 'dev-c', 'dev-d'];
    const reporters = devices.map((d) => reporter(url, d, { pushAttempts: 10 }));
    // A slow server holds every request, so all four fetch the same (absent) tip before any push lands.
    server.delayMs = 30;
    try {
      await Promise.all(reporters.map((r, i) => r.deliver(status(commit, devices[i]!, 'success', `applied by ${devices[i]}`))));
    } finally {
      server.delayMs = 0;
    }
    // The race did happen: more pushes were tried than there are devices.
    const pushes = server.requests.filter((r) => r.method === 'POST' && r.path === '/race.git/git-receive-pack').length;
    const pushDiscoveries = server.requests.filter((r) => r.path === '/race.git/info/refs' && r.query.includes('git-receive-pack')).length;
    expect(pushDiscoveries).toBeGreaterThan(devices.length);
    expect(pushes).toBeGreaterThanOrEqual(devices.length);
    const lines = parseStatusNote(await cliNote(clone, commit));
    expect(lines.map((l) => l.context).sort()).toEqual(devices.map(statusContext));
    expect(lines.every((l) => l.state === 'success' && l.description === `applied by ${l.context.slice('keystone/'.length)}`)).toBe(true);
  });

  it('keeps notes of other commits when it adds one, and reads a note git fanned out', async () => {
    const { url, clone, commit } = await remoteWithCommit('fanout');
    // A note written by git itself in the fanout layout (ab/cdef…), as git does once a notes tree is large.
    const other = 'f'.repeat(40);
    const blob = (await run('sh', ['-c', `printf 'keystone/dev-b success 2025-01-01T00:00:00.000Z applied\\n' | git hash-object -w --stdin`], { cwd: clone })).stdout.trim();
    const sub = (await run('sh', ['-c', `printf '100644 blob ${blob}\\t${commit.slice(2)}\\n' | git mktree`], { cwd: clone })).stdout.trim();
    const otherBlob = (await run('sh', ['-c', `printf 'other\\n' | git hash-object -w --stdin`], { cwd: clone })).stdout.trim();
    const top = (await run('sh', ['-c', `printf '040000 tree ${sub}\\t${commit.slice(0, 2)}\\n100644 blob ${otherBlob}\\t${other}\\n' | git mktree`], { cwd: clone })).stdout.trim();
    const notesCommit = (await git(clone, 'commit-tree', top, '-m', 'by git')).trim();
    await git(clone, 'push', '--quiet', 'origin', `${notesCommit}:refs/notes/keystone`);

    await reporter(url, 'dev-a').deliver(status(commit, 'dev-a', 'success', 'applied'));
    expect(await cliNote(clone, commit)).toBe('keystone/dev-b success 2025-01-01T00:00:00.000Z applied\nkeystone/dev-a success 2025-01-02T03:04:05.000Z applied\n');
    // Still in its fanout place (not duplicated flat), and the other note untouched.
    expect((await git(clone, 'ls-tree', '-r', '--name-only', 'refs/notes/keystone')).trim().split('\n').sort()).toEqual([`${commit.slice(0, 2)}/${commit.slice(2)}`, other].sort());
  });

  it('fails with a permanent coded error on a wrong token, and never shows the token', async () => {
    const { url, commit } = await remoteWithCommit('auth');
    const err = await reporter(url, 'dev-a', { token: 'wrong-token-0815' })
      .deliver(status(commit, 'dev-a', 'pending', 'applying'))
      .catch((e: unknown) => e);
    expect(isStatusDeliveryError(err, 'KS_STATUS_AUTH')).toBe(true);
    expect((err as { retryable: boolean }).retryable).toBe(false);
    expect(String((err as Error).message)).not.toContain('wrong-token-0815');
  });

  it('fails with a retryable coded error when the server is down', async () => {
    const { url, commit } = await remoteWithCommit('down');
    await server.stop();
    try {
      const err = await reporter(url, 'dev-a')
        .deliver(status(commit, 'dev-a', 'pending', 'applying'))
        .catch((e: unknown) => e);
      expect(isStatusDeliveryError(err, 'KS_STATUS_UNREACHABLE')).toBe(true);
      expect((err as { retryable: boolean }).retryable).toBe(true);
    } finally {
      await server.start();
    }
  });
});

describe('GitNotesReporter on a local repository path', () => {
  it('writes the note straight into the repository, merged with the other devices', async () => {
    const repo = tempDir('keystone-notes-local-');
    await git(repo, 'init', '--quiet', '--initial-branch=main');
    writeFileSync(join(repo, 'plan.toml'), '# local\n');
    await git(repo, 'add', '.');
    await git(repo, 'commit', '--quiet', '-m', 'first');
    const commit = (await git(repo, 'rev-parse', 'HEAD')).trim();
    await new GitNotesReporter({ repository: repo }).deliver(status(commit, 'dev-a', 'success', 'applied'));
    await new GitNotesReporter({ repository: repo }).deliver(status(commit, 'dev-b', 'error', 'rejected: unsigned'));
    expect(await git(repo, 'notes', '--ref', 'keystone', 'show', commit)).toBe(
      'keystone/dev-a success 2025-01-02T03:04:05.000Z applied\nkeystone/dev-b error 2025-01-02T03:04:05.000Z rejected: unsigned\n',
    );
  });

  it('says so, retryably, when the path is not a repository', async () => {
    const err = await new GitNotesReporter({ repository: tempDir() }).deliver(status('a'.repeat(40), 'dev-a', 'success', 'applied')).catch((e: unknown) => e);
    expect(isStatusDeliveryError(err, 'KS_STATUS_GIT_FAILED')).toBe(true);
  });
});
