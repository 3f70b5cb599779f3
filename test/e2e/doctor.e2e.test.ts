// `keystone doctor` beside a running agent (bin/keystone.js) that follows a Git remote: it reads the plan of the
// commit the agent applied from the agent's own Git cache, compares the clock with that commit's signature, checks the
// state directory the agent holds, and takes nothing from it: the agent keeps running, its lock untouched.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, is } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { gitIn } from '../support/git-env.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const run = promisify(execFile);

interface JsonCheck {
  check: string;
  ok: boolean;
  status: string;
  detail: string;
}

let root: string;
let server: GitHttpServer;
let fx: StackFixture;
let h: AgentHarness;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-doctor-e2e-'));
  server = await startGitHttpServer({ root: join(root, 'srv') });
  fx = await stackFixture({ signed: true, components: () => [sleeper('one'), sleeper('two')] });
  h = new AgentHarness();
  // As the agent itself creates one (0711): its run users pass through it to their work directories.
  chmodSync(h.stateDir, 0o711);
});

afterAll(async () => {
  await h?.cleanup();
  fx?.cleanup();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('keystone doctor beside a running agent that follows Git', { timeout: 120_000 }, () => {
  it('reads the applied commit’s plan from the agent’s cache and passes, while the agent runs on', async () => {
    const bare = server.createRepository('fleet');
    await gitIn(fx.dir, ['init', '--quiet', '--initial-branch=main']);
    await gitIn(fx.dir, ['add', '-A']);
    await gitIn(fx.dir, ['commit', '--quiet', '-m', 'two sleepers']);
    await gitIn(fx.dir, ['push', '--quiet', bare, 'HEAD:refs/heads/main']);
    const commit = await gitIn(fx.dir, ['rev-parse', 'HEAD']);

    const args = [
      '--repo',
      server.url('fleet'),
      '--plan',
      fx.plan,
      ...fx.trustArgs,
      '--state-dir',
      h.stateDir,
      '--status',
      'none',
      '--poll',
      '1h',
    ];
    const agent = h.start({
      repo: server.url('fleet'),
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: ['--status', 'none', '--poll', '1h'],
    });
    await agent.waitForLog(is.applyEnd, 60_000, 0, 'the apply of the first commit');
    expect(h.appliedRevision()?.id).toBe(commit);

    const { stdout } = await run(
      process.execPath,
      [join(PROJECT_ROOT, 'bin', 'keystone.js'), 'doctor', ...args, '--json'],
      { cwd: root, timeout: 60_000 },
    );
    const checks = JSON.parse(stdout) as JsonCheck[];
    const of = (id: string) => checks.find((c) => c.check === id)!;
    expect(
      checks.filter((c) => !c.ok),
      stdout,
    ).toEqual([]);
    expect(of('plan')).toMatchObject({
      status: 'pass',
      detail: `${fx.plan} (--plan) from commit ${commit.slice(0, 12)} (applied last): 2 components (2 processes)`,
    });
    expect(of('git-remote')).toMatchObject({
      status: 'pass',
      detail: `${server.url('fleet')} main is at ${commit.slice(0, 12)}`,
    });
    expect(of('state-dir').status).toBe('pass');
    expect(of('clock').status).toBe('pass');
    // As root the sleepers' default run user; as another user the agent's own (a warning, no failure).
    expect(of('run-users').status).toBe(process.getuid?.() === 0 ? 'pass' : 'warn');

    // Still running, still holding its state directory.
    expect(agent.exit).toBeUndefined();
    await agent.stop();
    expect(agent.exit?.code).toBe(0);
  });
});
