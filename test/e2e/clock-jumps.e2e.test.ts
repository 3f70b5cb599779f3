// Issue 18, clock jumps: the device's wall clock stepped back a day and forward a year under a running agent
// (libfaketime; the monotonic clock runs on, as through a real step). What runs keeps running (same pids, no
// restart counted), health probes keep their pace (no stall, no storm), and new revisions are refused or accepted
// exactly as docs/signing.md ("Time") says: the replay floor, --max-clock-skew and --max-age. One scenario per fault.
import { describe, expect, it } from 'vitest';
import { isAlive } from '../../src/runtime/proc-identity.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { needs } from '../support/requirements.js';
import { fourStack, freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { apiOf, probeCount, type AgentApi } from '../support/agent-api.js';
import { DAY_S, steppableClock, YEAR_S, type SteppableClock } from '../reliability/steppable-clock.js';

const faketime = needs('faketime');

interface World {
  fx: StackFixture;
  h: AgentHarness;
  clock: SteppableClock;
  agent: AgentProcess;
  api: AgentApi;
  port: number;
  pids: Record<string, number>;
  /** Starts another agent on the same state directory and clock (after the first stopped). */
  restart(): AgentProcess;
}

/** A signed stack (an http-checked stand-in probed every 200 ms, a sleeper) run by an agent on a steppable clock. */
async function withClockWorld(args: string[], body: (w: World) => Promise<void>): Promise<void> {
  const fx = await stackFixture({ signed: true, components: (p) => [fourStack(p)[0]!, sleeper('lone')] });
  const h = new AgentHarness();
  const clock = steppableClock();
  try {
    const [port] = (await freePorts(1)) as [number];
    const start = () =>
      h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--listen', `127.0.0.1:${port}`, ...args],
        env: clock.env,
      });
    const agent = start();
    const end = await agent.waitForLog(is.applyEnd, 40_000, 0, 'the first apply');
    expect(end.msg, agent.tail()).toBe('all components running');
    const w: World = {
      fx,
      h,
      clock,
      agent,
      api: apiOf(h.stateDir, port),
      port,
      pids: h.pidsOf(),
      restart: () => (w.agent = start()),
    };
    await body(w);
  } finally {
    await h.cleanup();
    clock.cleanup();
    fx.cleanup();
  }
}

/**
 * influxdb is probed every 200 ms: over a 2 s window, about ten probes. Zero would be timers stalled by the step (a
 * deadline on the wall clock, a day away); dozens would be a storm (every deadline on the wall clock due at once).
 */
async function expectProbePace(w: World): Promise<void> {
  const before = await probeCount(w.port, 'influxdb');
  await new Promise((r) => setTimeout(r, 2_000)); // the window itself: probes are counted over it
  const during = (await probeCount(w.port, 'influxdb')) - before;
  expect(during, 'probes in 2 s at a 200 ms interval').toBeGreaterThanOrEqual(3);
  expect(during, 'probes in 2 s at a 200 ms interval').toBeLessThanOrEqual(25);
}

/** Nothing restarted: the same processes, alive, recorded, with no restart counted and no exit seen. */
function expectNothingRestarted(w: World): void {
  expect(w.agent.exit, `the agent exited\n${w.agent.tail()}`).toBeUndefined();
  for (const [name, pid] of Object.entries(w.pids)) {
    expect(isAlive(pid), `${name} (pid ${pid}) is alive`).toBe(true);
    expect(w.h.component(name), name).toMatchObject({ state: 'running', restarts: 0, instance: { pid } });
  }
  expect(
    w.agent.lines((l) => l.msg === 'exited'),
    'component exits',
  ).toEqual([]);
}

/** The agent's own clock, as the Date header of its API's answers gives it, minus the real one (seconds). */
async function agentClockOffset(w: World): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${w.port}/healthz`, { signal: AbortSignal.timeout(10_000) });
  return (Date.parse(res.headers.get('date') ?? '') - Date.now()) / 1000;
}

/** Signs a change on the real clock (the fixture's): `lone` 1.0.1, which restarts only lone. */
async function pushSignedChange(w: World): Promise<string> {
  w.fx.bumpVersion('lone', '1.0.1');
  await w.fx.sign();
  return w.fx.revisionId();
}

const refusalOf = (w: World, rev: string, mark: number) =>
  w.agent.waitForLog(
    is.revision(rev, 'revision refused; still running the previous one'),
    20_000,
    mark,
    `the refusal of ${rev}`,
  );

describe.skipIf(faketime.skip)(faketime.title('clock steps under a running agent'), { timeout: 120_000 }, () => {
  it('fault: the clock steps back a day: nothing restarts, probes keep their pace, a revision signed on the real clock is refused as from the future, and applied on sync once the clock is right', async () => {
    await withClockWorld([], async (w) => {
      w.clock.step(-DAY_S);
      expect(await agentClockOffset(w)).toBeLessThan(-DAY_S + 60);
      await expectProbePace(w);
      expectNothingRestarted(w);

      const mark = w.agent.mark();
      const rev = await pushSignedChange(w);
      const refused = await refusalOf(w, rev, mark);
      expect(refused.reason).toMatch(/^KS_SIGNATURE_FROM_FUTURE: .*later than this device's clock/);
      expect(w.h.history()[0]).toMatchObject({ revision: rev, outcome: 'rejected' });
      expectNothingRestarted(w);

      // NTP steps the clock right again; the operator (or the retry's timer) has the agent look: it is applied now.
      w.clock.step(0);
      const again = w.agent.mark();
      const r = await w.api.post('/v1/sync?wait=done');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ outcome: 'applied', revision: rev });
      await w.agent.waitForLog(is.applyEnd, 20_000, again, 'the apply once the clock is right');
      expect(w.h.appliedRevision()?.id).toBe(rev);
      expect(w.h.pidsOf().influxdb).toBe(w.pids.influxdb);
      expect(w.h.component('lone')).toMatchObject({ state: 'running', version: '1.0.1' });
    });
  });

  it('fault: the clock steps back a day after a crash: the restart is given back after a healthy spell all the same', async () => {
    await withClockWorld(['--healthy-spell', '8s'], async (w) => {
      const mark = w.agent.mark();
      process.kill(w.pids.lone!, 'SIGKILL');
      await w.agent.waitForLog(is.state('lone', 'running'), 45_000, mark, 'lone back after its crash');
      expect(w.h.component('lone')?.restarts).toBe(1);
      // Within the spell: by the wall clock alone it would now end a day and 8 s from here.
      w.clock.step(-DAY_S);
      const deadline = Date.now() + 45_000;
      while (w.h.component('lone')?.restarts !== 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 200));
      expect(w.h.component('lone')?.restarts, 'restarts after an 8 s healthy spell').toBe(0);
      expect(w.h.pidsOf().influxdb).toBe(w.pids.influxdb);
    });
  });

  it('fault: the clock jumps forward a year: what runs past --max-age keeps running, nothing restarts, no probe storm; a revision signed on the real clock is refused as too old, and applied once the clock is right', async () => {
    await withClockWorld(['--max-age', '720h'], async (w) => {
      w.clock.step(YEAR_S);
      expect(await agentClockOffset(w)).toBeGreaterThan(YEAR_S - 60);
      await expectProbePace(w);
      expectNothingRestarted(w);

      const mark = w.agent.mark();
      const rev = await pushSignedChange(w);
      const refused = await refusalOf(w, rev, mark);
      expect(refused.reason).toMatch(/^KS_SIGNATURE_TOO_OLD: .*the state looks frozen/);
      expectNothingRestarted(w);

      w.clock.step(0);
      const r = await w.api.post('/v1/sync?wait=done');
      expect(r.body).toMatchObject({ outcome: 'applied', revision: rev });
      expect(w.h.pidsOf().influxdb).toBe(w.pids.influxdb);
    });
  });

  it('fault: the agent restarts a year later: what it runs, past --max-age, is adopted and still supervised (said loudly); a new revision signed on the real clock is refused as too old', async () => {
    await withClockWorld(['--max-age', '720h'], async (w) => {
      const applied = w.h.appliedRevision()!.id;
      expect((await w.agent.stop()).code).toBe(0);
      w.clock.step(YEAR_S);
      const agent = w.restart();
      for (const name of Object.keys(w.pids))
        await agent.waitForLog(is.about(name, 'adopted running instance'), 20_000, 0, `${name} adopted`);
      const stale = await agent.waitForLog(
        is.revision(
          applied,
          'the revision this device runs is older than --max-age: it keeps running, supervised; only a newer signed revision replaces it (or check the clock)',
        ),
        20_000,
        0,
        'the warning',
      );
      expect(stale.code).toBe('KS_SIGNATURE_TOO_OLD');
      await agent.waitForLog(is.applyEnd, 20_000, 0, 'the reconcile of what runs');
      // Supervised: probed at its pace, and a crash is restarted (not left down as "no valid revision loaded").
      await expectProbePace(w);
      expectNothingRestarted(w);
      const mark = agent.mark();
      process.kill(w.pids.lone!, 'SIGKILL');
      await agent.waitForLog(is.state('lone', 'running'), 20_000, mark, 'lone restarted after its crash');
      w.pids.lone = w.h.pidsOf().lone!;

      const rev = await pushSignedChange(w);
      const refused = await refusalOf(w, rev, mark);
      expect(refused.reason).toMatch(/^KS_SIGNATURE_TOO_OLD: /);
      expect(w.h.appliedRevision()?.id).toBe(applied);
      expect(w.h.pidsOf()).toEqual(w.pids);
    });
  });
});
