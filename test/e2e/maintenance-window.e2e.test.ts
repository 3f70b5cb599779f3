// Maintenance windows (SPEC §19) with a real agent on a wall clock the test sets (libfaketime; the monotonic clock
// runs on): a new revision outside the window waits — nothing applied, `pending` with when the window opens — and is
// applied when it opens, not before; `keystonectl apply --now` does not wait; a device that runs nothing yet applies
// its first revision at once.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN_FILE } from '../../src/api/api-token.js';
import { apiOf, type AgentApi } from '../support/agent-api.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { needs } from '../support/requirements.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { steppableClock, type SteppableClock } from '../reliability/steppable-clock.js';

const faketime = needs('faketime');

/** Today (real) at hh:mm:ss UTC, in ms. */
function todayAt(h: number, m: number, s: number): number {
  const d = new Date();
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), h, m, s);
}

type Json = Record<string, unknown>;

describe.skipIf(faketime.skip)(
  faketime.title('maintenance windows: a revision is applied inside the window only'),
  { timeout: 120_000 },
  () => {
    let fx: StackFixture;
    let h: AgentHarness;
    let clock: SteppableClock;
    let agent: AgentProcess;
    let api: AgentApi;
    let port: number;
    /** Sets the agent's wall clock to `ms` (it runs on from there). */
    const setClock = (ms: number) => clock.step(Math.round((ms - Date.now()) / 1000));
    const waiting = async () => ((await api.get('/v1/revision')).body as Json).waiting as Json | null;

    beforeAll(async () => {
      fx = await stackFixture({
        signed: false,
        components: () => [sleeper('api'), sleeper('web', [{ component: 'api', type: 'hard' }])],
      });
      h = new AgentHarness();
      clock = steppableClock();
      [port] = (await freePorts(1)) as [number];
      // 03:00–04:00 UTC every day; the device's clock at 02:50: outside, but it runs nothing yet.
      setClock(todayAt(2, 50, 0));
      agent = h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--listen', `127.0.0.1:${port}`, '--window', 'sun,mon,tue,wed,thu,fri,sat 03:00-04:00 UTC'],
        env: clock.env,
      });
      expect(
        (await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply, outside the window: nothing ran yet')).msg,
      ).toBe('all components running');
      api = apiOf(h.stateDir, port);
    }, 60_000);
    afterAll(async () => {
      await h?.cleanup();
      clock?.cleanup();
      fx?.cleanup();
    });

    it('outside the window: the revision waits (pending, when it opens); applied when the window opens, not before', async () => {
      setClock(todayAt(2, 59, 50));
      const before = h.pidsOf();
      const mark = agent.mark();
      fx.spec('api').version = '1.1.0';
      fx.write();
      const held = await agent.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('held: outside the maintenance window'),
        20_000,
        mark,
        'the revision to wait for the window',
      );
      const w = await waiting();
      const opensAt = todayAt(3, 0, 0);
      expect(w).toMatchObject({ opensAt: new Date(opensAt).toISOString(), holders: [] });
      expect(w!.reason).toMatch(
        /^held: outside the maintenance window \(opens (Sun|Mon|Tue|Wed|Thu|Fri|Sat) 03:00 UTC, in \d+s\)$/,
      );
      expect(h.history().filter((e) => e.revision === w!.revision)).toEqual([]);
      expect(h.pidsOf()).toEqual(before);
      const token = readFileSync(join(h.stateDir, API_TOKEN_FILE), 'utf8').trim();
      const status = await runCtl(['status', '--agent', `http://127.0.0.1:${port}`, '--token', token], fx.dir);
      expect(status.stdout).toMatch(
        /pending dir:[0-9a-f]+: held: outside the maintenance window \(opens \w{3} 03:00 UTC, in \d+s\)/,
      );

      const end = await agent.waitForLog(is.applyEnd, 40_000, mark, 'the apply once the window opens');
      expect(end.msg).toBe('all components running');
      // On the agent's clock: the apply began once the window was open, after the wait was announced.
      const began = agent.lines(is.msg('reconcile plan'), mark)[0]!;
      expect(began.t).toBeGreaterThanOrEqual(opensAt);
      expect(held.t).toBeLessThan(opensAt);
      expect(h.component('api')?.version).toBe('1.1.0');
      expect(await waiting()).toBeNull();
    });

    it('keystonectl apply --now does not wait for the window', async () => {
      setClock(todayAt(4, 30, 0));
      const mark = agent.mark();
      fx.spec('api').version = '1.2.0';
      fx.write();
      await agent.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('held: outside the maintenance window'),
        20_000,
        mark,
        'the revision to wait',
      );
      expect((await waiting())!.reason as string).toMatch(/opens \w{3} 03:00 UTC, in 2[23]h\d*m?\)$/);
      const token = readFileSync(join(h.stateDir, API_TOKEN_FILE), 'utf8').trim();
      const now = await runCtl(
        ['apply', fx.plan, ...fx.trustArgs, '--now', '--agent', `http://127.0.0.1:${port}`, '--token', token],
        fx.dir,
      );
      expect(now.code, now.stderr + now.stdout).toBe(0);
      expect(h.appliedRevision()?.id).toMatch(/^manual:/);
      expect(h.component('api')?.version).toBe('1.2.0');
      expect(await waiting()).toBeNull();
    });

    it('keystonectl sync --now: the revision waiting for its window goes now (the way on a device that follows Git)', async () => {
      setClock(todayAt(5, 0, 0));
      const mark = agent.mark();
      fx.spec('api').version = '1.3.0';
      fx.write();
      await agent.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('held: outside the maintenance window'),
        20_000,
        mark,
        'the revision to wait',
      );
      const waitingRev = (await waiting())!.revision as string;
      const token = readFileSync(join(h.stateDir, API_TOKEN_FILE), 'utf8').trim();
      const now = await runCtl(['sync', '--now', '--agent', `http://127.0.0.1:${port}`, '--token', token], fx.dir);
      expect(now.code, now.stderr + now.stdout).toBe(0);
      await agent.waitForLog(is.applyEnd, 20_000, mark, 'the apply of the waiting revision');
      expect(h.appliedRevision()?.id).toBe(waitingRev);
      expect(h.component('api')?.version).toBe('1.3.0');
      expect(await waiting()).toBeNull();
      const bad = await api.post('/v1/sync?now=yes');
      expect(bad.status).toBe(400);
    });
  },
);
