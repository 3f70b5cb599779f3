// The Git source against a real `git http-backend` server: the branch found; a missing branch; a server that is
// gone; one that does not answer within the timeout; a token it refuses; and a local repository.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkGitRemote } from '../../src/doctor/git-remote-check.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { scratch, type Scratch } from './doctor-fixtures.js';

let s: Scratch;
let server: GitHttpServer;
let ws: string;
let tip: string;

beforeAll(async () => {
  s = scratch();
  server = await startGitHttpServer({ root: join(s.dir, 'srv') });
  const bare = server.createRepository('fleet');
  ws = join(s.dir, 'ws');
  mkdirSync(ws);
  await gitIn(ws, ['init', '--quiet', '--initial-branch=main']);
  await gitIn(ws, ['commit', '--quiet', '--allow-empty', '-m', 'one']);
  tip = await gitIn(ws, ['rev-parse', 'HEAD']);
  await gitIn(ws, ['push', '--quiet', bare, 'main:refs/heads/main']);
});
afterAll(async () => {
  await server.stop();
  s.cleanup();
});

const git = (repo: string, ref = 'main', extra: { token?: string } = {}) => ({
  kind: 'git' as const,
  repo,
  ref,
  gitNotes: true,
  ...extra,
});

describe('git-remote', () => {
  it('passes a remote that has the branch, saying where it points', async () => {
    const r = await checkGitRemote(git(server.url('fleet')), 5000);
    expect(r).toMatchObject({
      check: 'git-remote',
      status: 'pass',
      detail: `${server.url('fleet')} main is at ${tip.slice(0, 12)}`,
    });
  });

  it('fails a branch the remote does not have', async () => {
    const r = await checkGitRemote(git(server.url('fleet'), 'release'), 5000);
    expect(r).toMatchObject({
      status: 'fail',
      code: 'KS_GIT_REF_NOT_FOUND',
      detail: `${server.url('fleet')} answers, but has no branch release`,
    });
    expect(r.fix).toContain('--ref');
  });

  it('fails a repository the server does not have', async () => {
    const r = await checkGitRemote(git(server.url('nothing')), 5000);
    expect(r).toMatchObject({ status: 'fail', code: 'KS_GIT_REPO_NOT_FOUND' });
  });

  it('fails a remote that does not answer in time', async () => {
    server.delayMs = 3000;
    try {
      const r = await checkGitRemote(git(server.url('fleet')), 300);
      expect(r).toMatchObject({ status: 'fail', code: 'KS_GIT_TIMEOUT' });
      expect(r.detail).toContain('took longer than 300 ms');
    } finally {
      server.delayMs = 0;
    }
  });

  it('fails a token the server refuses', async () => {
    server.token = 'right';
    try {
      const r = await checkGitRemote(git(server.url('fleet'), 'main', { token: 'wrong' }), 5000);
      expect(r).toMatchObject({ status: 'fail', code: 'KS_GIT_AUTH_FAILED' });
      expect(r.fix).toContain('--git-token-file');
    } finally {
      server.token = undefined;
    }
  });

  it('fails a server that is gone', async () => {
    await server.stop();
    try {
      const r = await checkGitRemote(git(server.url('fleet')), 5000);
      expect(r).toMatchObject({ status: 'fail', code: 'KS_GIT_UNREACHABLE' });
      // Refused, or reset when a connection kept alive from an earlier look was cut by the stop.
      expect(r.detail).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+\/fleet\.git \(ECONN(REFUSED|RESET)\)$/);
    } finally {
      await server.start();
    }
  });

  it('reads a local repository from its files', async () => {
    expect(await checkGitRemote(git(ws), 5000)).toMatchObject({
      status: 'pass',
      detail: `${ws} main is at ${tip.slice(0, 12)}`,
    });
    expect(await checkGitRemote(git(ws, 'release'), 5000)).toMatchObject({
      status: 'fail',
      code: 'KS_GIT_REF_NOT_FOUND',
    });
    expect(await checkGitRemote(git(s.dir), 5000)).toMatchObject({ status: 'fail', code: 'KS_NOT_A_GIT_REPOSITORY' });
  });

  it('skips a directory source', async () => {
    expect(await checkGitRemote({ kind: 'dir', root: ws }, 5000)).toMatchObject({ status: 'skip' });
  });
});
