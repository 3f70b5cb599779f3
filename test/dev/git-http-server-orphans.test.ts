// The development Git server must leave no `git http-backend` behind, whatever its client or its own process does.
// A backend reading a push body by its Content-Length loops on read() for ever at an early end of input (git's
// pipe_fixed_length). One was found orphaned after test/git/git-http-agent.test.ts (slow server, a push whose
// client has a deadline); reproduced here: a process that exits while a push body is still arriving leaves its
// backend reparented to init and spinning. The server now takes the whole body before it starts a backend, and kills
// its backends if its process exits.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitHttpServer, type GitHttpServer } from '../../src/dev/git-http-server.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { gitIn } from '../support/git-env.js';

/** Pids of git-http-backend processes serving `root` (their environment names it). */
function backendsOf(root: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('git-http-backend')) continue;
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`GIT_PROJECT_ROOT=${root}`))
        out.push(Number(pid));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** A receive-pack POST announcing 612 bytes and sending 100; resolves once they are written. */
function partialPush(port: number) {
  const req = request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/fleet.git/git-receive-pack',
    headers: { 'content-type': 'application/x-git-receive-pack-request', 'content-length': '612' },
  });
  req.on('error', () => undefined);
  return new Promise<typeof req>((resolve) => req.write(Buffer.alloc(100), () => resolve(req)));
}

async function settle(cond: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

describe('the development Git server leaves no backend behind', () => {
  let root: string;
  let server: GitHttpServer;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'keystone-dev-git-orphans-'));
    execFileSync('git', ['init', '--quiet', '--bare', join(root, 'fleet.git')]);
    server = await startGitHttpServer({ root });
  });
  afterAll(async () => {
    for (const pid of backendsOf(root)) process.kill(pid, 'SIGKILL');
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('a push that arrives whole is served as ever (the body reaches the backend)', async () => {
    const work = join(root, 'work');
    await gitIn(root, ['init', '--quiet', '--initial-branch=main', work]);
    await gitIn(work, ['commit', '--quiet', '--allow-empty', '-m', 'one']);
    const from = server.requests.length;
    await gitIn(work, ['push', '--quiet', server.url('fleet'), 'HEAD:refs/heads/main']);
    const post = server.requests.slice(from).find((r) => r.method === 'POST');
    expect(post).toMatchObject({ path: '/fleet.git/git-receive-pack', status: 200 });
    expect(post!.received).toBeGreaterThan(0);
    expect(await gitIn(work, ['ls-remote', server.url('fleet'), 'refs/heads/main'])).toContain(
      await gitIn(work, ['rev-parse', 'HEAD']),
    );
  });

  it('a client that goes away mid-body (no delay): no backend was ever started (499)', async () => {
    const from = server.requests.length;
    const req = await partialPush(server.port);
    await new Promise((r) => setTimeout(r, 300));
    expect(backendsOf(root), 'waiting for the body, not in a backend').toEqual([]);
    req.destroy();
    await settle(() => server.requests[from]?.status === 499, 5_000);
    expect(server.requests[from]?.status).toBe(499);
    expect(backendsOf(root)).toEqual([]);
  });

  it('the server process exits with a request in flight: no backend outlives it', { timeout: 30_000 }, async () => {
    // The server in a process of its own (as in a test worker), its client writing half a push when it exits.
    const script = `
      import { request } from 'node:http';
      import { startGitHttpServer } from ${JSON.stringify(join(PROJECT_ROOT, 'dist/dev/git-http-server.js'))};
      const server = await startGitHttpServer({ root: ${JSON.stringify(root)} });
      const req = request({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/fleet.git/git-receive-pack',
        headers: { 'content-type': 'application/x-git-receive-pack-request', 'content-length': '612' } });
      req.on('error', () => {});
      req.write(Buffer.alloc(100));
      setTimeout(() => process.exit(0), 500);`;
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 });
    // An orphan would be reparented and spin: give it a moment to show up.
    await new Promise((r) => setTimeout(r, 500));
    expect(backendsOf(root)).toEqual([]);
  });
});
