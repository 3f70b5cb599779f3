// A Git host that takes more than 5 s to start answering (busy, or a fleet of thousands polling it) is waited for,
// within the operation's own deadline: Node's global agent would close the silent socket after 5 s and isomorphic-git
// would fail with "Request timed out" (found by the fleet bench at 50 devices).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetedHttpClient, TransferBudget } from '../../src/git/git-http-client.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';

let root: string;
let server: GitHttpServer;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-slow-git-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
  server.createRepository('fleet');
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('a Git host slower than 5 s', { timeout: 60_000 }, () => {
  it('a look (ls-refs) waits for it within its budget, and a report is delivered', async () => {
    server.delayMs = 5_300;
    const budget = new TransferBudget(1 << 20, 30_000, 'a look');
    const refs = await budget.run(() =>
      git.listServerRefs({ http: budgetedHttpClient(budget, {}), url: server.url('fleet'), protocolVersion: 2 }),
    );
    expect(Array.isArray(refs)).toBe(true);

    const reporter = new GitNotesReporter({
      repository: server.url('fleet'),
      cacheDir: join(root, 'notes.git'),
      timeoutMs: 40_000,
    });
    await reporter.deliver({
      commit: 'a'.repeat(40),
      state: 'success',
      description: 'applied',
      context: 'keystone/slow-1',
      at: Date.UTC(2026, 0, 1),
    });
    expect(
      server.requests.filter((r) => r.path.endsWith('git-receive-pack') && r.method === 'POST' && r.status === 200),
    ).toHaveLength(1);
  });
});
