// Review repro F1: a SIGTERM that lands while an apply only stops things makes the apply `success` with the
// untouched checks skipped (engine.ts step 5 `this.stopping ? []`, apply-outcome.ts `interrupted` needs failures).
import { describe, expect, it } from 'vitest';
import { AgentHarness, is } from '../../support/agent-harness.js';
import { freePorts, neverHealthy, stackFixture, type ComponentSpec } from '../../support/stack-fixture.js';

const slowStopper: ComponentSpec = { name: 'r', version: '1.0.0', command: 'sh', args: ['-c', 'trap "sleep 4; exit 0" TERM; while :; do sleep 0.2; done'] };

describe('review F1 control', { timeout: 90_000 }, () => {
  it('SIGTERM during a stop-only apply writes success while an untouched component is unhealthy', async () => {
    const [closed] = (await freePorts(1)) as [number];
    const fx = await stackFixture({ signed: false, components: () => [neverHealthy('a', closed), slowStopper] });
    const h = new AgentHarness();
    try {
      const start = () => h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--grace', '10s'] });
      const first = start();
      await first.waitForLog(is.msgIncludes('apply failed'), 20_000);
      const m = first.mark();
      fx.remove('r'); // the next revision only stops r; a stays untouched (and unhealthy)
      const rev2 = await fx.revisionId();
      await first.waitForLog(is.state('r', 'stopping'), 20_000, m);
      await first.waitForLog((l) => is.applyEnd(l), 30_000, m);
      const rows = h.history().map((e) => `${e.id} ${e.revision} ${e.outcome ?? 'open'} ${e.summary ?? ''}`);
      console.log(rows.join('\n'));
      console.log('a:', JSON.stringify(h.component('a')));
      const row2 = h.history().find((e) => e.revision === rev2);
      expect(h.component('a')?.state).toBe('unhealthy');
      // The contract: not a success while a is unhealthy.
      expect(row2?.outcome).not.toBe('success');
    } finally {
      await h.cleanup();
      fx.cleanup();
    }
  });
});
