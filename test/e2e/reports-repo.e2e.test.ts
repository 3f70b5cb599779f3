// Issue 28, finding 2: a device need not be able to write the repository it follows. A real Git smart-HTTP server
// gives one token push rights and another read rights only; the agent follows the fleet repository with the read-only
// token and pushes its reports to a repository of their own with the other (`--status-repo`, `--status-token-file`).
// The commit is applied, its report lands in the reports repository, and nothing is written to the followed one.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import { AgentHarness } from '../support/agent-harness.js';
import { until } from '../support/composite-fixture.js';
import { GIT_ENV, gitIn } from '../support/git-env.js';
import { startGitHttpServer } from '../support/git-http-server.js';
import { git } from '../support/git-world.js';
import { stackFixture } from '../support/stack-fixture.js';

describe('reports in a repository of their own', { timeout: 120_000 }, () => {
  it('a device with a read-only token for the followed repository applies and reports to --status-repo', async () => {
    const root = mkdtempSync(join(tmpdir(), 'keystone-reports-repo-'));
    const server = await startGitHttpServer({ root: join(root, 'srv'), token: 'push-token', readToken: 'read-token' });
    const fleet = server.createRepository('fleet');
    const reports = server.createRepository('reports');
    const fx = await stackFixture({
      signed: true,
      components: () => [{ name: 'svc', version: '1.0.0', command: 'sleep', args: ['1000'] }],
    });
    const h = new AgentHarness();
    try {
      writeFileSync(join(root, 'read-token'), 'read-token\n', { mode: 0o600 });
      writeFileSync(join(root, 'push-token'), 'push-token\n', { mode: 0o600 });
      await git(fx.dir, 'init', '--quiet', '--initial-branch=main');
      await fx.sign(['--ref', 'main']);
      await git(fx.dir, 'add', '-A');
      await git(fx.dir, 'commit', '--quiet', '-m', 'svc 1.0.0');
      await git(fx.dir, 'push', '--quiet', fleet, 'HEAD:refs/heads/main');
      const commit = await git(fx.dir, 'rev-parse', 'HEAD');
      const refsBefore = execFileSync('git', ['-C', fleet, 'for-each-ref'], { encoding: 'utf8', env: GIT_ENV });

      h.start({
        repo: server.url('fleet'),
        plan: fx.plan,
        trustArgs: [...fx.trustArgs, '--require-ref'],
        args: [
          '--ref',
          'main',
          '--poll',
          '1s',
          '--device',
          'edge-1',
          '--status',
          'git-notes',
          '--git-token-file',
          join(root, 'read-token'),
          '--status-repo',
          server.url('reports'),
          '--status-token-file',
          join(root, 'push-token'),
        ],
      });
      const note = await until(
        async () =>
          (await readStatusNotes(reports, commit)).find(
            (l) => l.context === 'keystone/edge-1' && l.state === 'success',
          ),
        60_000,
        'the success note in the reports repository',
      );
      expect(note.description).toContain('applied');
      expect(h.components().find((c) => c.name === 'svc')?.state).toBe('running');
      // The followed repository is as it was: no notes, no rollout refs, nothing pushed.
      expect(execFileSync('git', ['-C', fleet, 'for-each-ref'], { encoding: 'utf8', env: GIT_ENV })).toBe(refsBefore);
      expect(
        server.requests.filter(
          (r) =>
            r.path.startsWith('/fleet.git') &&
            (r.path.endsWith('git-receive-pack') || r.query.includes('git-receive-pack')),
        ),
      ).toEqual([]);
      // And the read-only token is what the server says it is: a push with it is refused.
      // (Async: the server answers from this very process.)
      await expect(
        gitIn(
          fx.dir,
          ['push', '--quiet', server.url('fleet').replace('http://', 'http://x:read-token@'), 'HEAD:refs/heads/other'],
          { GIT_TERMINAL_PROMPT: '0' },
        ),
      ).rejects.toThrow(/403/);
    } finally {
      await h.cleanup();
      await server.stop();
      fx.cleanup();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
