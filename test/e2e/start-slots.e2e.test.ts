// `--concurrency` bounds the installs and spawns in flight, not the waits for health (SPEC §4, issue 16): with one
// slot, a component whose health waits on an independent one no longer blocks it, and two installs still never
// overlap. Proven without timing, by rendezvous in a shared directory:
//   - `slow` is healthy only once `fast` has written its mark. If a slot were held through the wait for health,
//     `fast` could never start and `slow` would fail at the end of its start budget.
//   - `a` and `b` each install by waiting (up to 3 s) for the other's install to begin. Under one slot neither sees
//     the other; without the limit both would.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { stackFixture, type ComponentSpec, type StackFixture } from '../support/stack-fixture.js';

const idle = 'setInterval(() => {}, 1000)';

/** Installs by marking `install-<me>`, waiting up to 3 s for `install-<other>` (records `met` or `alone`), unmarking. */
function rendezvousInstall(me: string, other: string, dir: string): ComponentSpec {
  const mine = join(dir, `install-${me}`);
  const theirs = join(dir, `install-${other}`);
  const result = join(dir, `result-${me}`);
  return {
    name: me,
    version: '1.0.0',
    command: 'node',
    args: ['-e', idle],
    install: `touch ${mine}; i=0; while [ $i -lt 30 ]; do if [ -e ${theirs} ]; then echo met > ${result}; rm ${mine}; exit 0; fi; sleep 0.1; i=$((i+1)); done; echo alone > ${result}; rm ${mine}`,
  };
}

describe('the concurrency limit bounds installs and spawns, not waits for health', { timeout: 90_000 }, () => {
  let fx: StackFixture;
  let h: AgentHarness;
  let agent: AgentProcess;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ks-slots-'));
    // The components write here as the device's unprivileged default user.
    chmodSync(dir, 0o777);
    const fastMark = join(dir, 'fast-up');
    const slow: ComponentSpec = {
      name: 'slow',
      version: '1.0.0',
      command: 'node',
      args: ['-e', idle],
      health: { check: `cmd:test -e ${fastMark}`, interval: '100ms', failureThreshold: 100 },
    };
    const fast: ComponentSpec = {
      name: 'fast',
      version: '1.0.0',
      command: 'sh',
      args: ['-c', `touch ${fastMark}; exec sleep 1000`],
    };
    fx = await stackFixture({
      signed: false,
      components: () => [slow, fast, rendezvousInstall('a', 'b', dir), rendezvousInstall('b', 'a', dir)],
    });
    h = new AgentHarness();
    agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--concurrency', '1'] });
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
    fx?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('one slot: the slow component waits for health without holding it, so the independent one starts', async () => {
    expect((await agent.waitForLog(is.applyEnd, 60_000, 0, 'the first apply')).msg).toBe('all components running');
    expect(existsSync(join(dir, 'fast-up'))).toBe(true);
    // `slow` came first in start order, yet `fast` was spawned before `slow` was healthy.
    const lines = agent.lines(() => true);
    const fastStarting = lines.findIndex((l) => l.component === 'fast' && l.state === 'starting');
    const slowRunning = lines.findIndex((l) => l.component === 'slow' && l.state === 'running');
    expect(fastStarting).toBeGreaterThanOrEqual(0);
    expect(fastStarting).toBeLessThan(slowRunning);
  });

  it('one slot: two independent installs never overlap', () => {
    expect(readFileSync(join(dir, 'result-a'), 'utf8').trim()).toBe('alone');
    expect(readFileSync(join(dir, 'result-b'), 'utf8').trim()).toBe('alone');
  });
});
