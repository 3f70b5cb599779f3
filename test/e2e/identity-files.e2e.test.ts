// A device given a new identity in place (SPEC §15), the way the agent's own refusal says to: its identity directory is
// gone while device.json remembers it, the agent refuses to start (KS_IDENTITY_MISSING, exit 2) naming the fix, and
// once device.json is moved aside as it says, the next start makes new keys (another report key, which the fleet
// reads as forged until the device is enrolled again: test/e2e/device-identity.e2e.test.ts) and runs the stack.
// The refusals themselves (a report key others can read, an identity gone) are test/e2e/identity.e2e.test.ts's.
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentHarness } from '../support/agent-harness.js';
import { keystoneIdentity } from '../support/enrolled-fleet.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

let h: AgentHarness | undefined;
let fx: StackFixture | undefined;

afterEach(async () => {
  await h?.cleanup();
  fx?.cleanup();
  h = undefined;
  fx = undefined;
});

describe('a new identity in place', { timeout: 60_000 }, () => {
  it('moving device.json aside, as KS_IDENTITY_MISSING says, makes new keys at the next start, and the agent runs', async () => {
    fx = await stackFixture({ components: () => [sleeper('a')] });
    h = new AgentHarness();
    const before = await keystoneIdentity(h.stateDir, 'gw-1');
    const start = () =>
      h!.start({
        dir: fx!.dir,
        plan: fx!.plan,
        trustArgs: fx!.trustArgs,
        args: ['--device', 'gw-1', '--stop-on-exit'],
      });
    const marker = join(h.stateDir, 'device.json');

    renameSync(join(h.stateDir, 'identity'), join(h.stateDir, 'identity.lost'));
    const refused = start();
    expect((await refused.waitForExit()).code).toBe(2);
    expect(refused.stderr).toContain(`move ${marker} aside to make a new identity`);
    expect(refused.stderr).toContain('[KS_IDENTITY_MISSING]');

    renameSync(marker, `${marker}.old`);
    const ok = start();
    const created = await ok.waitForLog(
      (l) => String(l.msg).startsWith('created the device identity'),
      15_000,
      0,
      'a new identity',
    );
    expect(created.report_key).not.toBe(before.reportKey);
    expect((await keystoneIdentity(h.stateDir, 'gw-1')).reportKey).toBe(created.report_key);
    await ok.waitForLog((l) => l.msg === 'all components running', 30_000, 0, 'the stack to run');
  });
});
