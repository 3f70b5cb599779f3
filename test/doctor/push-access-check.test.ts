// Issue 28, finding 2: `keystone doctor` warns when this device can write the repository it follows. Against a real
// `git http-backend` server that gives one token push rights and another read rights only: the check asks the push
// discovery (nothing is pushed) and says which it is, and warns when reports go to the followed repository itself.
// Then through the real `keystone doctor` command, as an operator runs it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPushAccess } from '../../src/doctor/push-access-check.js';
import { sameRepository } from '../../src/git/git-repo-location.js';
import { execFile } from 'node:child_process';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { scratch, type Scratch } from './doctor-fixtures.js';

let s: Scratch;
let server: GitHttpServer;
const WRITE = 'push-token';
const READ = 'read-token';

beforeAll(async () => {
  s = scratch();
  server = await startGitHttpServer({ root: join(s.dir, 'srv'), token: WRITE, readToken: READ });
  server.createRepository('fleet');
  server.createRepository('reports');
  const ws = join(s.dir, 'ws');
  mkdirSync(ws);
  await gitIn(ws, ['init', '--quiet', '--initial-branch=main']);
  await gitIn(ws, ['commit', '--quiet', '--allow-empty', '-m', 'one']);
  await gitIn(ws, ['push', '--quiet', join(s.dir, 'srv', 'fleet.git'), 'main:refs/heads/main']);
});
afterAll(async () => {
  await server.stop();
  s.cleanup();
});

/** `keystone doctor --json` as built (dist/): its checks, whatever its exit code (a failing check is not this test's). */
function doctor(args: string[], cwd: string): Promise<Array<{ check: string; status: string }>> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [join(PROJECT_ROOT, 'bin', 'keystone.js'), 'doctor', ...args],
      { cwd, timeout: 60_000 },
      (err, stdout) => {
        try {
          resolve(JSON.parse(stdout) as Array<{ check: string; status: string }>);
        } catch {
          reject(err ?? new Error(`not JSON: ${stdout}`));
        }
      },
    ),
  );
}

const source = (token: string, statusRepo?: string, statusToken?: string) => ({
  kind: 'git' as const,
  repo: server.url('fleet'),
  ref: 'main',
  token,
  gitNotes: true,
  ...(statusRepo !== undefined && { statusRepo }),
  ...(statusToken !== undefined && { statusToken }),
});

describe('push-access', () => {
  it('warns when reports go to the followed repository (its credential must push there)', async () => {
    const r = await checkPushAccess(source(WRITE), 5000);
    expect(r).toMatchObject({ check: 'push-access', status: 'warn' });
    expect(r.detail).toContain('reports go to the followed repository');
    expect(r.fix).toContain('--status-repo');
  });

  it('warns when the followed repository has its own reports repository but a token that can push to it', async () => {
    const r = await checkPushAccess(source(WRITE, server.url('reports')), 5000);
    expect(r).toMatchObject({ status: 'warn' });
    expect(r.detail).toBe(
      `the credential of --git-token-file can push to ${server.url('fleet')}: a compromised device could change what every device runs`,
    );
    expect(r.fix).toContain('read-only token');
  });

  it('passes a read-only token with a reports repository of its own', async () => {
    const r = await checkPushAccess(source(READ, server.url('reports')), 5000);
    expect(r).toMatchObject({
      status: 'pass',
      detail: `${server.url('fleet')} is read-only for this device; reports go to ${server.url('reports')}`,
    });
  });

  it('warns when the reports token can push to the followed repository too (one token scoped to both)', async () => {
    const r = await checkPushAccess(source(READ, server.url('reports'), WRITE), 5000);
    expect(r).toMatchObject({ status: 'warn' });
    expect(r.detail).toContain('the credential of --status-token-file can push to');
    expect(r.fix).toContain('reports repository alone');
  });

  it('the followed repository under another name for the same server is the followed repository', async () => {
    const alias = server
      .url('fleet')
      .replace('127.0.0.1', 'localhost')
      .replace(/\.git$/, '.git/');
    const r = await checkPushAccess(source(READ, alias, WRITE), 5000);
    expect(r).toMatchObject({ status: 'warn' });
    expect(r.detail).toContain('reports go to the followed repository');
    expect(sameRepository('HTTP://LocalHost:80/a/fleet.git/', 'http://127.0.0.1/a/fleet')).toBe(true);
    expect(sameRepository('https://git.example.com/a/fleet.git', 'https://git.example.com/a/reports.git')).toBe(false);
    expect(sameRepository('/srv/git/fleet.git', '/srv/git/fleet/')).toBe(true);
  });

  it('the read-only token does read: it is not "no access at all"', async () => {
    const { refListerFor } = await import('../../src/source/ref-lister.js');
    const { refs } = await refListerFor(server.url('fleet'), { token: READ }).list(['refs/heads/main']);
    expect(refs.map((r) => r.ref)).toContain('refs/heads/main');
  });

  it('keystone doctor shows it, and a warning does not fail the device', async () => {
    // The reports on a server of their own, whose token the fleet's server does not take: as on a real Git host where
    // the reports token is scoped to the reports repository.
    const reportsServer = await startGitHttpServer({ root: join(s.dir, 'reports-srv'), token: 'reports-only' });
    try {
      reportsServer.createRepository('reports');
      const dir = join(s.dir, 'cli');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'read-token'), `${READ}\n`, { mode: 0o600 });
      writeFileSync(join(dir, 'push-token'), `${WRITE}\n`, { mode: 0o600 });
      writeFileSync(join(dir, 'reports-token'), 'reports-only\n', { mode: 0o600 });
      const common = [
        '--json',
        '--repo',
        server.url('fleet'),
        '--allow-unsigned',
        '--state-dir',
        join(dir, 'state'),
        '--plan',
        'plans/x.toml',
      ];
      const readOnly = await doctor(
        [
          ...common,
          '--git-token-file',
          join(dir, 'read-token'),
          '--status-repo',
          reportsServer.url('reports'),
          '--status-token-file',
          join(dir, 'reports-token'),
        ],
        dir,
      );
      const reachesBoth = await doctor(
        [
          ...common,
          '--git-token-file',
          join(dir, 'read-token'),
          '--status-repo',
          server.url('reports'),
          '--status-token-file',
          join(dir, 'push-token'),
        ],
        dir,
      );
      const sameRepo = await doctor([...common, '--git-token-file', join(dir, 'push-token')], dir);
      const find = (checks: Array<{ check: string; status: string }>) => checks.find((c) => c.check === 'push-access');
      expect(find(readOnly)).toMatchObject({ status: 'pass' });
      expect(find(reachesBoth)).toMatchObject({ status: 'warn' });
      expect(find(sameRepo)).toMatchObject({ status: 'warn' });
    } finally {
      await reportsServer.stop();
    }
  });
});
