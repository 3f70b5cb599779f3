// The Git notes reporter against a real Git smart-HTTP server (git http-backend), read back with the git CLI: what
// another tool or an operator would see. Each device writes only its own refs/notes/keystone-devices/<device>.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isStatusDeliveryError } from '../../src/report/commit-status.js';
import { deviceNotesRef } from '../../src/report/device-notes-ref.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { mergeStatusNote, parseStatusNote } from '../../src/report/status-note.js';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import { cliAllLines, cliNote, git, NotesFixture, run, status } from '../support/notes-fixture.js';

let fx: NotesFixture;
beforeAll(async () => {
  fx = await NotesFixture.start();
});
afterAll(async () => {
  await fx.close();
});
afterEach(() => fx.cleanDirs());

describe('status note text', () => {
  it('replaces only the device own line and keeps lines it does not understand', () => {
    const a = status('a'.repeat(40), 'dev-a', 'pending', 'applying: start api');
    const note = mergeStatusNote(
      'keystone/dev-b success 2025-01-01T00:00:00.000Z applied\nsomething a human wrote\n',
      a,
    );
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
  it("pushes a note on the device's own ref that the git CLI reads, for a commit the cache never had, and never writes the shared ref", async () => {
    const { url, clone, commit } = await fx.remoteWithCommit('one');
    await fx.reporter(url, 'dev-a').deliver(status(commit, 'dev-a', 'pending', 'applying: start api, web'));
    expect(await cliNote(clone, commit)).toBe(
      'keystone/dev-a pending 2025-01-02T03:04:05.000Z applying: start api, web\n',
    );
    const refs = (await git(clone, 'ls-remote', 'origin', 'refs/notes/*'))
      .trim()
      .split('\n')
      .map((l) => l.split('\t')[1]);
    expect(refs).toEqual(['refs/notes/keystone-devices/dev-a']);
    // Every request carried the token: the server refuses anything else.
    expect(fx.served('one').every((r) => r.status !== 401)).toBe(true);
  });

  it('keeps each device on its own ref, shown together by git log; an update replaces only that device line', async () => {
    const { url, clone, commit } = await fx.remoteWithCommit('two');
    const a = fx.reporter(url, 'dev-a');
    const b = fx.reporter(url, 'dev-b');
    await a.deliver(status(commit, 'dev-a', 'pending', 'applying'));
    await b.deliver(status(commit, 'dev-b', 'pending', 'applying'));
    await a.deliver(
      status(commit, 'dev-a', 'failure', 'failed: api (health check timed out)', Date.UTC(2025, 0, 2, 3, 5, 0)),
    );
    expect(await cliAllLines(clone, commit)).toEqual([
      'keystone/dev-a failure 2025-01-02T03:05:00.000Z failed: api (health check timed out)',
      'keystone/dev-b pending 2025-01-02T03:04:05.000Z applying',
    ]);
    // Each device's notes history is its own and linear: dev-a built on its own last commit.
    expect((await git(clone, 'log', '--format=%s', deviceNotesRef('dev-a'))).trim().split('\n')).toEqual([
      `keystone/dev-a: failure ${commit}`,
      `keystone/dev-a: pending ${commit}`,
    ]);
    expect((await git(clone, 'log', '--format=%s', deviceNotesRef('dev-b'))).trim().split('\n')).toEqual([
      `keystone/dev-b: pending ${commit}`,
    ]);
  });

  it('rebuilds on the server tip of its own ref when the cache lost it, keeping notes of other commits and a note git fanned out', async () => {
    const { url, clone, commit } = await fx.remoteWithCommit('fanout');
    // dev-a's ref as a wiped state directory left it on the server, written by git itself in the fanout layout
    // (ab/cdef…), as git does once a notes tree is large, with a note on another commit.
    const other = 'f'.repeat(40);
    const blob = (
      await run(
        'sh',
        ['-c', `printf 'keystone/dev-a success 2025-01-01T00:00:00.000Z applied\\n' | git hash-object -w --stdin`],
        { cwd: clone },
      )
    ).stdout.trim();
    const sub = (
      await run('sh', ['-c', `printf '100644 blob ${blob}\\t${commit.slice(2)}\\n' | git mktree`], { cwd: clone })
    ).stdout.trim();
    const otherBlob = (
      await run('sh', ['-c', `printf 'other\\n' | git hash-object -w --stdin`], { cwd: clone })
    ).stdout.trim();
    const top = (
      await run(
        'sh',
        [
          '-c',
          `printf '040000 tree ${sub}\\t${commit.slice(0, 2)}\\n100644 blob ${otherBlob}\\t${other}\\n' | git mktree`,
        ],
        { cwd: clone },
      )
    ).stdout.trim();
    const notesCommit = (await git(clone, 'commit-tree', top, '-m', 'by git')).trim();
    await git(clone, 'push', '--quiet', 'origin', `${notesCommit}:${deviceNotesRef('dev-a')}`);

    await fx.reporter(url, 'dev-a').deliver(status(commit, 'dev-a', 'failure', 'failed: api'));
    expect(await cliNote(clone, commit)).toBe('keystone/dev-a failure 2025-01-02T03:04:05.000Z failed: api\n');
    // Built on the server's tip: still in its fanout place (not duplicated flat), the other note untouched.
    const ref = deviceNotesRef('dev-a');
    expect((await git(clone, 'ls-tree', '-r', '--name-only', ref)).trim().split('\n').sort()).toEqual(
      [`${commit.slice(0, 2)}/${commit.slice(2)}`, other].sort(),
    );
    expect((await git(clone, 'rev-parse', `${ref}^`)).trim()).toBe(notesCommit);
  });

  it('a cache object damaged by a kill mid-write: the delivery fails saying so, the cache is rebuilt, the next one arrives (npm run chaos found it)', async () => {
    const { url, clone, commit } = await fx.remoteWithCommit('damaged');
    const cacheDir = join(fx.tempDir('keystone-notes-cache-'), 'notes.git');
    const a = fx.reporter(url, 'dev-a', { cacheDir });
    await a.deliver(status(commit, 'dev-a', 'pending', 'applying'));
    // Every loose object the cache wrote, cut short as a power cut leaves a file that was never synced.
    const objects = join(cacheDir, 'objects');
    for (const d of readdirSync(objects).filter((x) => /^[0-9a-f]{2}$/.test(x)))
      for (const f of readdirSync(join(objects, d))) truncateSync(join(objects, d, f), 7);
    const damaged = await a.deliver(status(commit, 'dev-a', 'failure', 'failed: api')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStatusDeliveryError(damaged) && damaged.retryable, String(damaged)).toBe(true);
    expect(String(damaged)).toContain('the local notes cache was damaged and is rebuilt at the next attempt');
    // The outbox tries again: the line arrives, on top of what the server held.
    await a.deliver(status(commit, 'dev-a', 'failure', 'failed: api'));
    expect(await cliNote(clone, commit)).toMatch(/^keystone\/dev-a failure \S+ failed: api\n$/);
    // The rebuilt cache is the agent's alone at once, not only after the next start (issue 28's review).
    expect(statSync(cacheDir).mode & 0o777).toBe(0o700);
  });

  it('pushes its notes again, as a new root commit, when the server lost the ref (the cache keeps no history to push)', async () => {
    const { url, bare, clone, commit } = await fx.remoteWithCommit('lost');
    const other = 'e'.repeat(40);
    const a = fx.reporter(url, 'dev-a');
    await a.deliver(status(other, 'dev-a', 'success', 'applied'));
    await run('git', ['-C', bare, 'update-ref', '-d', deviceNotesRef('dev-a')]); // a server restored from an old backup
    await a.deliver(status(commit, 'dev-a', 'success', 'applied'));
    expect(await cliNote(clone, commit)).toBe('keystone/dev-a success 2025-01-02T03:04:05.000Z applied\n');
    expect(await git(clone, 'notes', '--ref', deviceNotesRef('dev-a'), 'show', other)).toBe(
      'keystone/dev-a success 2025-01-02T03:04:05.000Z applied\n',
    );
    expect((await git(clone, 'rev-list', '--count', deviceNotesRef('dev-a'))).trim()).toBe('1');
  });

  it('fails with a permanent coded error on a wrong token, and never shows the token', async () => {
    const { url, commit } = await fx.remoteWithCommit('auth');
    const err = await fx
      .reporter(url, 'dev-a', { token: 'wrong-token-0815' })
      .deliver(status(commit, 'dev-a', 'pending', 'applying'))
      .catch((e: unknown) => e);
    expect(isStatusDeliveryError(err, 'KS_STATUS_AUTH')).toBe(true);
    expect((err as { retryable: boolean }).retryable).toBe(false);
    expect(String((err as Error).message)).not.toContain('wrong-token-0815');
  });

  it('fails with a retryable coded error when the server is down', async () => {
    const { url, commit } = await fx.remoteWithCommit('down');
    await fx.server.stop();
    try {
      const err = await fx
        .reporter(url, 'dev-a')
        .deliver(status(commit, 'dev-a', 'pending', 'applying'))
        .catch((e: unknown) => e);
      expect(isStatusDeliveryError(err, 'KS_STATUS_UNREACHABLE')).toBe(true);
      expect((err as { retryable: boolean }).retryable).toBe(true);
    } finally {
      await fx.server.start();
    }
  });

  it('refuses, permanently, a status whose context is not keystone/<device>', async () => {
    const { url, commit } = await fx.remoteWithCommit('context');
    const err = await fx
      .reporter(url, 'dev-a')
      .deliver({ ...status(commit, 'dev-a', 'pending', 'applying'), context: 'ci/build' })
      .catch((e: unknown) => e);
    expect(isStatusDeliveryError(err, 'KS_STATUS_INVALID')).toBe(true);
  });
});

describe('GitNotesReporter on a local repository path', () => {
  it("writes each device's note straight into the repository, on its own ref", async () => {
    const repo = fx.tempDir('keystone-notes-local-');
    await git(repo, 'init', '--quiet', '--initial-branch=main');
    writeFileSync(join(repo, 'plan.toml'), '# local\n');
    await git(repo, 'add', '.');
    await git(repo, 'commit', '--quiet', '-m', 'first');
    const commit = (await git(repo, 'rev-parse', 'HEAD')).trim();
    await new GitNotesReporter({ repository: repo }).deliver(status(commit, 'dev-a', 'success', 'applied'));
    await new GitNotesReporter({ repository: repo }).deliver(status(commit, 'dev-b', 'error', 'rejected: unsigned'));
    expect(await git(repo, 'notes', '--ref', deviceNotesRef('dev-b'), 'show', commit)).toBe(
      'keystone/dev-b error 2025-01-02T03:04:05.000Z rejected: unsigned\n',
    );
    expect(
      (await git(repo, 'log', '--no-walk', '--notes=keystone*', '--format=%N', commit)).trim().split('\n'),
    ).toEqual([
      'keystone/dev-a success 2025-01-02T03:04:05.000Z applied',
      'keystone/dev-b error 2025-01-02T03:04:05.000Z rejected: unsigned',
    ]);
    expect((await readStatusNotes(join(repo, '.git'), commit)).map((l) => [l.context, l.state])).toEqual([
      ['keystone/dev-a', 'success'],
      ['keystone/dev-b', 'error'],
    ]);
  });

  it('says so, retryably, when the path is not a repository', async () => {
    const err = await new GitNotesReporter({ repository: fx.tempDir() })
      .deliver(status('a'.repeat(40), 'dev-a', 'success', 'applied'))
      .catch((e: unknown) => e);
    expect(isStatusDeliveryError(err, 'KS_STATUS_GIT_FAILED')).toBe(true);
  });
});
