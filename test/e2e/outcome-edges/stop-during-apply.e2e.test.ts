// An apply that a stop cuts short is no outcome (SPEC §5; outcomes.ts, rule 4). Issue 27's review found that a SIGTERM
// (systemctl restart, a package upgrade) landing while an apply only stopped components made that apply a `success`,
// although a component it left untouched was unhealthy: the stop skipped the health check of the untouched
// components, and the apply counted as cut short only when something had failed already. Pinned here: the row of an
// apply the stop cut short stays open, whatever the apply had found so far, and the next start finishes it with its
// true result; left to end, the same apply is a failure (the control: the scenario does make a failure).
//
// Directory mode, real agent processes (test/support/agent-harness.ts). The plan has `a`, never healthy (its check
// asks a closed port), and `r`, whose TERM trap takes 4 s. The first apply fails (a); then r is removed from the plan,
// so the next apply only stops r, slowly, and leaves a untouched and unhealthy.
import { describe, expect, it } from 'vitest';
import { AgentHarness, is, type AgentProcess } from '../../support/agent-harness.js';
import { freePorts, neverHealthy, stackFixture, type ComponentSpec } from '../../support/stack-fixture.js';

const slowStopper: ComponentSpec = {
  name: 'r',
  version: '1.0.0',
  command: 'sh',
  args: ['-c', 'trap "sleep 4; exit 0" TERM; while :; do sleep 0.2; done'],
};

/** Runs `body` on an agent whose first apply failed (a) and whose second apply, of `rev2`, is stopping r now. */
async function whileStoppingR(
  body: (o: {
    h: AgentHarness;
    first: AgentProcess;
    rev2: string;
    mark: number;
    start: () => AgentProcess;
  }) => Promise<void>,
): Promise<void> {
  const [closed] = (await freePorts(1)) as [number];
  const fx = await stackFixture({ signed: false, components: () => [neverHealthy('a', closed), slowStopper] });
  const h = new AgentHarness();
  try {
    const start = () => h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--grace', '10s'] });
    const first = start();
    await first.waitForLog(is.msgIncludes('apply failed'), 20_000, 0, 'the first apply to fail (a never gets healthy)');
    const mark = first.mark();
    fx.remove('r');
    const rev2 = await fx.revisionId();
    await first.waitForLog(is.state('r', 'stopping'), 20_000, mark, 'the second apply to stop r');
    await body({ h, first, rev2, mark, start });
  } finally {
    await h.cleanup();
    fx.cleanup();
  }
}

describe.concurrent(
  'an apply that only stops components, with an untouched component unhealthy',
  { timeout: 90_000 },
  () => {
    it('cut short by a SIGTERM, it stays open (no outcome, never a success), and the next start finishes it as failure', async () => {
      await whileStoppingR(async ({ h, first, rev2, mark, start }) => {
        await first.stop(30_000);
        await first.waitForLog(is.msgIncludes('apply interrupted'), 1_000, mark, 'the apply to be said interrupted');
        const [open] = h.history().filter((e) => e.revision === rev2);
        expect(open, 'the row of the apply the stop cut short').toMatchObject({ revision: rev2 });
        expect(open!.outcome, 'no outcome while cut short').toBeUndefined();
        expect(h.component('a')?.state).toBe('unhealthy');

        // The next start applies the same revision again: it finishes that row with the true result.
        const second = start();
        const end = await second.waitForLog(is.applyEnd, 30_000, 0, 'the restarted agent to finish the apply');
        expect(end.msg).toMatch(/^apply failed/);
        expect(h.history().filter((e) => e.revision === rev2)).toMatchObject([
          { id: open!.id, outcome: 'failure', failed: [{ name: 'a' }] },
        ]);
        expect(h.history().filter((e) => e.outcome === 'success')).toEqual([]);
      });
    });

    it('left to end, it is a failure: the untouched unhealthy component fails it', async () => {
      await whileStoppingR(async ({ h, first, rev2, mark }) => {
        await first.waitForLog(is.applyEnd, 30_000, mark, 'the end of the second apply');
        expect(h.component('a')?.state).toBe('unhealthy');
        expect(h.history().filter((e) => e.revision === rev2)).toMatchObject([
          { outcome: 'failure', failed: [{ name: 'a' }] },
        ]);
      });
    });
  },
);
