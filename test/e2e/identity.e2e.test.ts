// The device's keys at the real agent's start (bin/keystone.js, SPEC §15): made at the first start and kept after it,
// logged by their public halves only; a report key others can read stops the start (exit 2, the file and the fix
// named) before anything that runs is touched, and so does an identity that is gone from a state directory that had one.
import { chmodSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identityPaths } from '../../src/identity/device-keys.js';
import { is, type AgentHarness, type AgentProcess } from '../support/agent-harness.js';
import { sleeper, type StackFixture } from '../support/stack-fixture.js';
import { withStack } from '../support/with-stack.js';

const withAgents = (body: (fx: StackFixture, h: AgentHarness) => Promise<void>) =>
  withStack({ components: () => [sleeper('db')] }, body);
const start = (h: AgentHarness, fx: StackFixture) => h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

/** The one line a refused start writes to stderr. */
function oneLine(agent: AgentProcess): string {
  const lines = agent.stderr.split('\n').filter(Boolean);
  expect(lines, agent.stderr).toHaveLength(1);
  return lines[0]!;
}

describe.concurrent("the device's keys at the agent's start", { timeout: 90_000 }, () => {
  it('a fresh state directory: the keys are made (0700/0600) and logged by their public halves; the next start keeps them', async () => {
    await withAgents(async (fx, h) => {
      const paths = identityPaths(h.stateDir);
      const first = start(h, fx);
      const made = await first.waitForLog(is.msgIncludes('created the device identity'), 15_000, 0, 'the keys made');
      await first.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
      expect(mode(paths.dir)).toBe('700');
      expect(mode(paths.reportKey)).toBe('600');
      expect(mode(paths.ageKey)).toBe('600');
      expect(made).toMatchObject({
        path: paths.dir,
        report_key: readFileSync(paths.reportPub, 'utf8').split('\n')[1],
        age_recipient: expect.stringMatching(/^age1/),
      });
      expect((await first.stop()).code).toBe(0);
      // Nothing secret in the log.
      const secret = readFileSync(paths.ageKey, 'utf8').split('\n')[2]!;
      expect(JSON.stringify(first.logs)).not.toContain(secret);
      expect(JSON.stringify(first.logs)).not.toContain(readFileSync(paths.reportKey, 'utf8').split('\n')[1]!);

      const second = start(h, fx);
      const kept = await second.waitForLog(is.msg('device identity'), 15_000, 0, 'the keys kept');
      expect(kept.report_key).toBe(made.report_key);
      expect(kept.age_recipient).toBe(made.age_recipient);
      expect(second.lines(is.msgIncludes('created the device identity'))).toEqual([]);
      await second.waitForLog(is.applyEnd, 30_000, 0, 'the resume');
      await second.stop();
    });
  });

  it('report.key with mode 0644: exit 2 naming the file and the chmod, the running component untouched; it starts once fixed', async () => {
    await withAgents(async (fx, h) => {
      const paths = identityPaths(h.stateDir);
      const first = start(h, fx);
      await first.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
      expect((await first.stop()).code).toBe(0);
      const db = h.component('db')!.instance as { kind: 'process'; pid: number; startTime: string };
      const applies = h.history().length;

      chmodSync(paths.reportKey, 0o644);
      const refused = start(h, fx);
      expect((await refused.waitForExit()).code).toBe(2);
      const line = oneLine(refused);
      expect(line).toContain(
        `keystone agent: refused: ${paths.reportKey} can be read or written by other users (mode 0644)`,
      );
      expect(line).toContain(`chmod 600 ${paths.reportKey}`);
      expect(line).toContain('[KS_IDENTITY_UNSAFE]');
      // Nothing adopted, stopped or applied: the component runs on as the first agent left it.
      expect(refused.logs.filter((l) => l.module === 'supervisor' || l.msg === 'adopted running instance')).toEqual([]);
      expect(h.component('db')!.instance).toEqual(db);
      expect(h.history()).toHaveLength(applies);
      expect(() => process.kill(db.pid, 0)).not.toThrow();

      chmodSync(paths.reportKey, 0o600);
      const fixed = start(h, fx);
      const adopted = await fixed.waitForLog(is.about('db', 'adopted running instance'), 15_000, 0, 'db adopted');
      expect(adopted.pid).toBe(db.pid);
      await fixed.stop();
    });
  });

  it('the identity directory gone from a state directory that had one: exit 2 (KS_IDENTITY_MISSING), no new keys made', async () => {
    await withAgents(async (fx, h) => {
      const paths = identityPaths(h.stateDir);
      const first = start(h, fx);
      await first.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
      await first.stop();
      renameSync(paths.dir, join(h.stateDir, 'identity.moved'));
      const refused = start(h, fx);
      expect((await refused.waitForExit()).code).toBe(2);
      const line = oneLine(refused);
      expect(line).toContain(`${paths.marker} says this device had one`);
      expect(line).toContain('[KS_IDENTITY_MISSING]');
      expect(() => statSync(paths.dir)).toThrow();
    });
  });
});
