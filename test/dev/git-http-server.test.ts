// The development Git server (src/dev/git-http-server.ts) behind `npm run git-server` and the tests: a client that
// gives up while the server holds its request (delayMs) must not leave a git http-backend behind. One was found
// spinning for hours after a test whose client timed out during the delay: it was spawned after the response had
// closed, so nothing ever killed it or ended its input.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitHttpServer, type GitHttpServer } from '../../src/dev/git-http-server.js';
import { until } from '../support/composite-fixture.js';

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

describe('the development Git server', () => {
  let root: string;
  let server: GitHttpServer;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'keystone-dev-git-'));
    execFileSync('git', ['init', '--quiet', '--bare', join(root, 'fleet.git')]);
    server = await startGitHttpServer({ root });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('serves nobody once a client gave up during its delay: no backend is left behind', async () => {
    server.delayMs = 400;
    try {
      const from = server.requests.length;
      const { port } = new URL(server.url('fleet'));
      // A receive-pack POST whose client goes away before the server's delay is over.
      await new Promise<void>((resolve) => {
        const req = request({
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/fleet.git/git-receive-pack',
          headers: { 'content-type': 'application/x-git-receive-pack-request', 'content-length': '612' },
        });
        req.on('error', () => resolve());
        req.write(Buffer.alloc(100));
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 100);
      });
      await until(
        () => server.requests.length > from && server.requests[from]!.status === 499,
        5_000,
        'the abandoned request dropped (499)',
      );
      expect(backendsOf(root)).toEqual([]);
    } finally {
      server.delayMs = 0;
    }
  });
});
