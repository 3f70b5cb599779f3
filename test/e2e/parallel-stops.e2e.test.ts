// Stops run like starts: dependents before their dependencies, and components that do not depend on each other at
// once. Proven without timing: a and b each, on SIGTERM, wait for the other's SIGTERM before exiting (a rendezvous in a
// shared directory); stopped one at a time, the first would wait in vain and be killed at the end of the grace period.
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { stackFixture, type ComponentSpec, type StackFixture } from '../support/stack-fixture.js';

/** On SIGTERM: mark `term-<me>`, wait (up to 20 s) for `term-<other>`, mark `done-<me>`, exit 0. */
function rendezvous(me: string, other: string, dir: string, version = '1.0.0'): ComponentSpec {
  const script = [
    `const fs = require('node:fs'); const path = require('node:path'); const dir = ${JSON.stringify(dir)};`,
    `process.on('SIGTERM', () => {`,
    `  fs.writeFileSync(path.join(dir, 'term-${me}'), '');`,
    `  const deadline = Date.now() + 20000;`,
    `  const t = setInterval(() => {`,
    `    if (fs.existsSync(path.join(dir, 'term-${other}'))) { fs.writeFileSync(path.join(dir, 'done-${me}'), ''); process.exit(0); }`,
    `    if (Date.now() > deadline) process.exit(1);`,
    `  }, 20);`,
    `});`,
    `setInterval(() => {}, 1000);`,
  ].join('\n');
  return { name: me, version, command: 'node', args: ['-e', script] };
}

describe('independent components stop at once; dependents still stop first', { timeout: 60_000 }, () => {
  let fx: StackFixture;
  let h: AgentHarness;
  let agent: AgentProcess;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ks-rendezvous-'));
    // The components write here as the device's unprivileged default user.
    chmodSync(dir, 0o777);
    const top: ComponentSpec = {
      name: 'top',
      version: '1.0.0',
      command: 'sleep',
      args: ['1000'],
      dependencies: [
        { component: 'a', type: 'hard' },
        { component: 'b', type: 'hard' },
      ],
    };
    fx = await stackFixture({
      signed: false,
      components: () => [rendezvous('a', 'b', dir), rendezvous('b', 'a', dir), top],
    });
    h = new AgentHarness();
    // A short grace: stopped one at a time, `a` would be killed after 2 s instead of meeting `b`.
    agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--grace', '2s'] });
    expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
    fx?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a new version of a and b stops top first, then a and b together: each sees the other's SIGTERM", async () => {
    const mark = agent.mark();
    // One write: both in the same revision.
    fx.spec('a').version = '1.1.0';
    fx.spec('b').version = '1.1.0';
    fx.write();
    const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the apply of a and b 1.1.0');
    expect(end.msg).toBe('all components running');
    expect(existsSync(join(dir, 'done-a'))).toBe(true);
    expect(existsSync(join(dir, 'done-b'))).toBe(true);
    const stopping = agent.lines((l) => l.state === 'stopping', mark).map((l) => l.component);
    expect(stopping[0]).toBe('top');
    expect([...stopping.slice(1)].sort()).toEqual(['a', 'b']);
    expect(
      agent.lines(
        (l) => l.msg === 'killed after the grace period' || (typeof l.msg === 'string' && l.msg.includes('SIGKILL')),
        mark,
      ),
    ).toEqual([]);
  });
});
