// The device's key files as the real agent checks them at its start (SPEC §15, issue 29 "Bad input"): a report key
// other users can read, or an identity gone while the state directory says the device had one, and the agent refuses
// to start (exit 2), naming the file and the fix, before it runs anything; once fixed as it says, it starts.
import { chmodSync, renameSync } from 'node:fs';
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

async function world() {
  fx = await stackFixture({ components: () => [sleeper('a')] });
  h = new AgentHarness();
  const before = await keystoneIdentity(h.stateDir, 'gw-1');
  const start = () => h!.start({ dir: fx!.dir, plan: fx!.plan, trustArgs: fx!.trustArgs, args: ['--device', 'gw-1', '--stop-on-exit'] });
  return { h, before, start, identityDir: join(h.stateDir, 'identity') };
}

describe("the agent refuses to start on the device's key files", { timeout: 60_000 }, () => {
  it('a report key other users can read (0644): exit 2, KS_IDENTITY_UNSAFE with the file and the chmod; nothing runs', async () => {
    const w = await world();
    const key = join(w.identityDir, 'report.key');
    chmodSync(key, 0o644);
    const refused = w.start();
    expect((await refused.waitForExit()).code).toBe(2);
    expect(refused.stderr).toContain(`${key} can be read or written by other users (mode 0644)`);
    expect(refused.stderr).toContain(`chmod 600 ${key}`);
    expect(refused.stderr).toContain('[KS_IDENTITY_UNSAFE]');
    expect(refused.lines((l) => l.msg === 'agent started')).toEqual([]);
    expect(w.h.processesOf('a')).toEqual([]);

    // Fixed as it says: the same keys, and the stack runs.
    chmodSync(key, 0o600);
    const ok = w.start();
    const identity = await ok.waitForLog((l) => l.msg === 'device identity', 15_000, 0, 'the device identity line');
    expect(identity.report_key).toBe(w.before.reportKey);
    await ok.waitForLog((l) => l.msg === 'all components running', 30_000, 0, 'the stack to run');
  });

  it("the identity directory gone while device.json remembers it: exit 2, KS_IDENTITY_MISSING; moving device.json aside makes a new identity", async () => {
    const w = await world();
    renameSync(w.identityDir, join(w.h.stateDir, 'identity.lost'));
    const refused = w.start();
    expect((await refused.waitForExit()).code).toBe(2);
    expect(refused.stderr).toContain(`report key ${w.before.reportKey}`);
    expect(refused.stderr).toContain(`move ${join(w.h.stateDir, 'device.json')} aside to make a new identity`);
    expect(refused.stderr).toContain('[KS_IDENTITY_MISSING]');
    expect(refused.lines((l) => l.msg === 'agent started')).toEqual([]);

    // A new identity, as the message says: a new key, which a fleet reads as forged until the device is enrolled again.
    renameSync(join(w.h.stateDir, 'device.json'), join(w.h.stateDir, 'device.json.old'));
    const ok = w.start();
    const created = await ok.waitForLog((l) => String(l.msg).startsWith('created the device identity'), 15_000, 0, 'a new identity');
    expect(created.report_key).not.toBe(w.before.reportKey);
    await ok.waitForLog((l) => l.msg === 'all components running', 30_000, 0, 'the stack to run');
  });
});
