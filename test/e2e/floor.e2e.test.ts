// Finding 7 end to end with the real agent (bin/keystone.js): a revision signed in 2100 is refused and raises no
// floor; a floor an older agent raised to 2100 locks honest revisions out until the owner runs `keystone floor
// --reset` on the device, which refuses while the agent runs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/keystone.js';
import type { CliIo } from '../../src/cli/io.js';
import { openStateStore } from '../../src/store/state-store.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const YEAR_2100 = 4_102_444_800;

async function keystone(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    cwd: '/',
    env: {},
  };
  const code = await main(args, io, { once: () => {} });
  return { code, stdout, stderr };
}

async function refusal(agent: AgentProcess, fx: StackFixture): Promise<string> {
  const rev = await fx.revisionId();
  const line = await agent.waitForLog(
    is.revision(rev, 'revision refused; still running the previous one'),
    20_000,
    0,
    `the refusal of ${rev}`,
  );
  return String(line.reason);
}

const signedAtOf = (fx: StackFixture) =>
  Number(/timestamp:(\d+)/.exec(readFileSync(join(fx.dir, 'SHA256SUMS.minisig'), 'utf8'))![1]);
const floorOf = (stateDir: string) => {
  const s = openStateStore(stateDir);
  try {
    return s.lastSignedAt();
  } finally {
    s.close();
  }
};

describe('a signature from the future, end to end', { timeout: 120_000 }, () => {
  it('refused without raising the floor; a poisoned floor is recovered with keystone floor --reset, never while the agent runs', async () => {
    const fx = await stackFixture({ signed: true, components: () => [sleeper('one')] });
    const h = new AgentHarness();
    try {
      // 1. Signed in 2100 (a wrong clock on the signer's machine): refused, and the floor stays where it was.
      const key = fx.trustArgs[1]!.replace(/\.pub$/, '.key');
      const signed = await runCtl(['sign', '--key', key], fx.dir, { now: () => YEAR_2100 * 1000 });
      expect(signed.code, signed.stderr).toBe(0);
      let agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      expect(await refusal(agent, fx)).toMatch(/^KS_SIGNATURE_FROM_FUTURE: .*2100-01-01T00:00:00\.000Z/);
      await agent.stop();
      expect(floorOf(h.stateDir)).toBeUndefined();

      // 2. The state an agent without that check left behind: it applied the 2100 revision.
      const s = openStateStore(h.stateDir);
      s.setAppliedRevision({
        id: 'dir:from-2100',
        source: fx.dir,
        planFile: fx.plan,
        signedAt: YEAR_2100,
        unsigned: false,
        appliedAt: Date.now(),
      });
      s.close();
      await fx.sign();
      agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      expect(await refusal(agent, fx)).toMatch(/^KS_SIGNATURE_REPLAYED: /);

      // 3. The reset refuses while the agent runs on the state directory.
      const busy = await keystone(['floor', '--state-dir', h.stateDir, '--reset']);
      expect(busy.code).toBe(1);
      // Refused by the agent's own lock, naming the agent that holds it.
      expect(busy.stderr).toContain(`another agent (pid ${agent.pid})`);
      expect(busy.stderr).toContain('[KS_STATE_DIR_LOCKED]');
      expect(floorOf(h.stateDir)).toBe(YEAR_2100);
      await agent.stop();

      // 4. Stopped: lowered to the honest revision's signing time, which the agent then applies.
      const to = new Date(signedAtOf(fx) * 1000).toISOString();
      // `floor --to` refuses a time later than this machine's clock; a VM's clock has been seen to step back a
      // fraction of a second between the signature and here (once, under load): wait until it is there again.
      for (const deadline = Date.now() + 5_000; Date.now() < signedAtOf(fx) * 1000 && Date.now() < deadline;)
        await new Promise((r) => setTimeout(r, 20));
      const reset = await keystone(['floor', '--state-dir', h.stateDir, '--reset', '--to', to]);
      expect(reset.code, reset.stderr).toBe(0);
      agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the end of the apply');
      expect(end.msg).toBe('all components running');
      expect(h.appliedRevision()).toMatchObject({ id: await fx.revisionId(), signedAt: signedAtOf(fx) });
      await agent.stop();
      expect(floorOf(h.stateDir)).toBe(signedAtOf(fx));
    } finally {
      await h.cleanup();
      fx.cleanup();
    }
  });
});
