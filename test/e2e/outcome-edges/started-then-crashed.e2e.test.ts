// An apply is a success only when everything it started is still running when it ends (SPEC §5; outcomes.ts, rule 6).
// Issue 27's review found that a component started healthy by an apply, which then crashed while the apply still
// waited for another component's health, left the apply a `success`: a started component was judged at its start
// only, and the check at the end covered the untouched ones alone. Pinned here: the crash fails the apply, and the
// failure names the component that crashed.
//
// Directory mode, a real agent process (test/support/agent-harness.ts). `flap` has no check (healthy once up 200 ms)
// and crashes 1.5 s after its start, every later start at once; `slow` gets healthy only after 4 s, so the apply is
// still under way when flap crashes.
import { describe, expect, it } from 'vitest';
import { AgentHarness, is } from '../../support/agent-harness.js';
import { stackFixture, type ComponentSpec } from '../../support/stack-fixture.js';

const flap: ComponentSpec = {
  name: 'flap',
  version: '1.0.0',
  command: 'sh',
  args: ['-c', 'if [ -f crashed ]; then exit 1; fi; sleep 1.5; touch crashed; exit 1'],
  restartPolicy: 'always',
};
const slow: ComponentSpec = {
  name: 'slow',
  version: '1.0.0',
  command: 'sh',
  args: ['-c', 'sleep 4; touch ready; exec sleep 1000'],
  health: { check: 'cmd:test -f ready', interval: '300ms', timeout: '250ms', failureThreshold: 40 },
};

describe('a component that crashes after its start, before the apply ends', { timeout: 90_000 }, () => {
  it('fails the apply: it is a failure that names the component, never a success', async () => {
    const fx = await stackFixture({ signed: false, components: () => [flap, slow] });
    const h = new AgentHarness();
    try {
      const rev = await fx.revisionId();
      const a = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      // flap was healthy once: the apply had it started before it crashed.
      await a.waitForLog(is.state('flap', 'running'), 15_000, 0, 'flap to run healthy');
      const end = await a.waitForLog(is.applyEnd, 30_000, 0, 'the end of the apply');
      expect(end.msg).toMatch(/^apply failed/);
      const [row] = h.history();
      expect(row).toMatchObject({
        revision: rev,
        outcome: 'failure',
        failed: [expect.objectContaining({ name: 'flap' })],
      });
      expect(row!.failed.map((f) => f.name)).not.toContain('slow');
    } finally {
      await h.cleanup();
      fx.cleanup();
    }
  });
});
