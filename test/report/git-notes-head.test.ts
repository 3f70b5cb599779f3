// Git notes on a server repository whose HEAD names a branch that does not exist (made with `master`, the fleet pushes
// `main`): a device that must fetch its own notes ref (its cache was lost) still reports. That fetch failed with
// "Could not find HEAD." (isomorphic-git's fetch resolves the remote HEAD whatever ref it is asked for).
import { afterEach, beforeEach, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const git = async (...args: string[]) => (await run('git', args, { env: GIT_ENV })).stdout.trim();

let root: string;
let server: GitHttpServer;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-noteshead-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
});

afterEach(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

it('a device whose notes cache was lost reports again on a server whose HEAD is master (it must fetch its own ref)', async () => {
  const bare = server.createRepository('fleet', 'master');
  const ws = join(root, 'ws');
  await git('init', '--quiet', '--initial-branch=main', ws);
  await git('-C', ws, 'commit', '--quiet', '--allow-empty', '-m', 'one');
  await git('-C', ws, 'commit', '--quiet', '--allow-empty', '-m', 'two');
  await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
  const [second, first] = (await git('-C', ws, 'log', '--format=%H', '-2')).split('\n') as [string, string];
  const device = (name: string) =>
    new GitNotesReporter({ repository: server.url('fleet'), cacheDir: join(root, `cache-${name}`) });
  const at = Date.parse('2026-12-01T12:00:00Z');
  await device('a').deliver({ commit: first, state: 'success', description: 'applied', context: 'keystone/a', at });
  await device('b').deliver({
    commit: first,
    state: 'failure',
    description: 'apply failed',
    context: 'keystone/b',
    at,
  });
  // A wiped cache: the next push is refused (the server's ref is ahead of nothing), so the reporter fetches its own
  // ref and builds on it; that fetch failed with "Could not find HEAD." on this server.
  rmSync(join(root, 'cache-a'), { recursive: true, force: true });
  await device('a').deliver({ commit: second, state: 'success', description: 'applied', context: 'keystone/a', at });
  expect(await git('--git-dir', bare, 'notes', '--ref', 'keystone-devices/a', 'show', first)).toMatch(
    /^keystone\/a success /m,
  );
  expect(await git('--git-dir', bare, 'notes', '--ref', 'keystone-devices/a', 'show', second)).toMatch(
    /^keystone\/a success /m,
  );
  expect(await git('--git-dir', bare, 'notes', '--ref', 'keystone-devices/b', 'show', first)).toMatch(
    /^keystone\/b failure /m,
  );
});
