// A server repository whose HEAD names a branch that does not exist (a bare repository created with `master` while
// the fleet pushes `main`): the followed branch is fetched all the same, over HTTP and from a local path.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Revision } from '../../src/source/directory-source.js';
import { GitSource } from '../../src/source/git-source.js';
import type { GitSourceOptions } from '../../src/source/git-source-options.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';

const run = promisify(execFile);
const git = async (...args: string[]) => (await run('git', args, { env: GIT_ENV })).stdout.trim();

let root: string;
let server: GitHttpServer;
const sources: GitSource[] = [];

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-githead-'));
  server = await startGitHttpServer({ root: join(root, 'server') });
});

afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Pushes one commit to `main` of `bare`, whose HEAD still names `master` (which never gets a commit). */
async function pushMain(bare: string, text: string): Promise<string> {
  const ws = join(root, 'ws');
  if (!existsSync(ws)) await git('init', '--quiet', '--initial-branch=main', ws);
  mkdirSync(join(ws, 'plans'), { recursive: true });
  writeFileSync(join(ws, 'plans/plan.toml'), text);
  await git('-C', ws, 'add', '-A');
  await git('-C', ws, 'commit', '--quiet', '-m', 'one');
  await git('-C', ws, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
  return git('-C', ws, 'rev-parse', 'HEAD');
}

function follow(repo: string) {
  const revisions: Revision[] = [];
  const errors: Error[] = [];
  const opts: GitSourceOptions = {
    repo,
    ref: 'main',
    cacheDir: join(root, 'cache'),
    pollMs: 3_600_000,
    random: () => 0.5,
    allowHistoryRewrite: false,
    lastAppliedCommit: () => revisions.at(-1)?.id,
    onRevision: (r) => revisions.push(r),
    onRejected: () => undefined,
    onError: (e) => errors.push(e),
  };
  const source = new GitSource(opts);
  sources.push(source);
  return { source, revisions, errors };
}

describe('a remote whose HEAD names a branch that does not exist', () => {
  it('over HTTP: the followed branch is fetched and offered', async () => {
    const bare = server.createRepository('fleet', 'master');
    expect(await git('--git-dir', bare, 'symbolic-ref', 'HEAD')).toBe('refs/heads/master');
    const main = await pushMain(bare, '# on main\n');
    const f = follow(server.url('fleet'));
    await f.source.start();
    expect(f.errors.map((e) => e.message)).toEqual([]);
    expect(f.revisions.map((r) => r.id)).toEqual([main]);
    const file = await f.revisions[0]!.reader.readFile('plans/plan.toml', 1024);
    expect(file.ok && Buffer.from(file.bytes).toString()).toBe('# on main\n');
    // And the next commit, fetched into the cache the first one made.
    const next = await pushMain(bare, '# next\n');
    await f.source.syncNow();
    expect(f.errors.map((e) => e.message)).toEqual([]);
    expect(f.revisions.map((r) => r.id)).toEqual([main, next]);
  });

  it('from a local path: the followed branch is read and offered', async () => {
    const bare = join(root, 'local.git');
    await git('init', '--quiet', '--bare', '--initial-branch=master', bare);
    const main = await pushMain(bare, '# local main\n');
    const f = follow(bare);
    await f.source.start();
    expect(f.errors.map((e) => e.message)).toEqual([]);
    expect(f.revisions.map((r) => r.id)).toEqual([main]);
  });
});
