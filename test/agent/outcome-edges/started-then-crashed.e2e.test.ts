// Review repro F2: a component started healthy by an apply that crashes before the apply ends (while another
// component still waits for its health) leaves the apply `success` (apply-outcome.ts looks at started ones only at
// their start; checkUntouched covers untouched ones only).
import { describe, expect, it } from 'vitest';
import { AgentHarness, is } from '../../support/agent-harness.js';
import { stackFixture, type ComponentSpec } from '../../support/stack-fixture.js';

// Healthy (no check: up 200 ms), then crashes at 1.5 s; every later start crashes at once.
const flap: ComponentSpec = { name: 'flap', version: '1.0.0', command: 'sh', args: ['-c', 'if [ -f crashed ]; then exit 1; fi; sleep 1.5; touch crashed; exit 1'], restartPolicy: 'always' };
// Healthy after 4 s.
const slow: ComponentSpec = { name: 'slow', version: '1.0.0', command: 'sh', args: ['-c', 'sleep 4; touch ready; exec sleep 1000'], health: { check: 'cmd:test -f ready', interval: '300ms', timeout: '250ms', failureThreshold: 40 } };

describe('review F2', { timeout: 90_000 }, () => {
  it('a component that crashes after its start but before the apply ends: success is written', async () => {
    const fx = await stackFixture({ signed: false, components: () => [flap, slow] });
    const h = new AgentHarness();
    try {
      const a = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      const end = await a.waitForLog(is.applyEnd, 30_000);
      console.log('apply end:', end.msg);
      console.log(h.history().map((e) => `${e.id} ${e.outcome} ${e.summary}`).join('\n'));
      console.log('flap at the end:', h.component('flap')?.state, h.component('flap')?.reason, 'restarts', h.component('flap')?.restarts);
      console.log(a.lines((l) => l.component === 'flap' && typeof l.state === 'string').map((l) => `${l.time} ${l.state}`).join('\n'));
      expect(h.history()[0]?.outcome).not.toBe('success');
    } finally {
      await h.cleanup();
      fx.cleanup();
    }
  });
});
