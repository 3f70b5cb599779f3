// The worked example of SPEC §4 and reference/four-component-stack.md, end to end: the real agent in directory
// mode (unsigned development mode), the real stand-in programs, real kill -9. One agent's life in four phases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSameProcess } from '../../src/runtime/proc-identity.js';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { stackFixture, type StackFixture } from '../support/stack-fixture.js';

const STACK = ['influxdb', 'api', 'telemetry', 'web'];

// Generous timeouts: the waits inside have their own, tighter deadlines.
describe('the four-component stack in directory mode', { timeout: 60_000 }, () => {
  let fx: StackFixture;
  let h: AgentHarness;
  let agent: AgentProcess;

  beforeAll(async () => {
    fx = await stackFixture({ signed: false });
    h = new AgentHarness();
  });
  afterAll(async () => {
    await h?.cleanup();
    fx?.cleanup();
  });

  /** The recorded pid of each component, after checking it is that very process (pid and start time). */
  const livePids = () => {
    const pids: Record<string, number> = {};
    for (const c of h.components()) {
      expect(c.state, `${c.name} state`).toBe('running');
      expect(c.instance?.kind).toBe('process');
      if (c.instance?.kind !== 'process') continue;
      expect(
        isSameProcess(c.instance.pid, c.instance.startTime),
        `${c.name}'s pid ${c.instance.pid} is the recorded process`,
      ).toBe(true);
      pids[c.name] = c.instance.pid;
    }
    expect(Object.keys(pids).sort()).toEqual([...STACK].sort());
    return pids;
  };
  const componentLines = (name: string, after: number, state?: string) =>
    agent.lines((l: LogLine) => l.component === name && (state === undefined || l.state === state), after);

  it('a fresh start brings all four up, layer by layer', async () => {
    agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
    const rev = await fx.revisionId();
    const plan = await agent.waitForLog(is.revision(rev, 'reconcile plan'), 15_000, 0, 'the first reconcile plan');
    expect(plan).toMatchObject({ stop_order: [], start_order: STACK, no_touch: [] });
    const end = await agent.waitForLog(is.applyEnd, 20_000, 0, 'the end of the first apply');
    expect(end.msg).toBe('all components running');
    for (const name of STACK) expect(componentLines(name, 0, 'running'), `${name} state=running`).toHaveLength(1);
    // Health-gated: each starts after its dependencies are running.
    const t = (name: string, state: string) => componentLines(name, 0, state)[0]!.t;
    expect(t('api', 'starting')).toBeGreaterThanOrEqual(t('influxdb', 'running'));
    expect(t('telemetry', 'starting')).toBeGreaterThanOrEqual(t('influxdb', 'running'));
    expect(t('web', 'starting')).toBeGreaterThanOrEqual(t('api', 'running'));
    const pids = livePids();
    for (const name of STACK)
      expect(
        h
          .processesOf(name)
          .filter((p) => p.argv.includes(fx.spec(name).artifact!))
          .map((p) => p.pid),
      ).toEqual([pids[name]]);
    expect(h.history()[0]).toMatchObject({ revision: rev, outcome: 'success' });
  });

  it("bumping api's version restarts exactly api and web", async () => {
    const before = livePids();
    const mark = agent.mark();
    fx.bumpVersion('api', '1.5.0');
    const rev = await fx.revisionId();
    const plan = await agent.waitForLog(is.revision(rev, 'reconcile plan'), 10_000, mark, 'the reconcile of the bump');
    expect(plan).toMatchObject({
      stop_order: ['web', 'api'],
      start_order: ['api', 'web'],
      no_touch: ['influxdb', 'telemetry'],
    });
    const end = await agent.waitForLog(is.applyEnd, 20_000, mark, 'the end of the bump');
    expect(end.msg).toBe('all components running');

    for (const name of ['influxdb', 'telemetry']) {
      expect(agent.lines(is.about(name, 'reusing existing running instance (no restart)'), mark), name).toHaveLength(1);
      expect(
        componentLines(name, mark).filter((l) => l.state !== undefined),
        `no state change of ${name}`,
      ).toEqual([]);
    }
    for (const name of ['api', 'web']) {
      expect(componentLines(name, mark, 'stopping'), `${name} stopped once`).toHaveLength(1);
      expect(componentLines(name, mark, 'running'), `${name} running again`).toHaveLength(1);
    }
    // Stop order: web before api; start order: api healthy before web starts.
    expect(componentLines('web', mark, 'stopping')[0]!.t).toBeLessThanOrEqual(
      componentLines('api', mark, 'stopping')[0]!.t,
    );
    expect(componentLines('web', mark, 'starting')[0]!.t).toBeGreaterThanOrEqual(
      componentLines('api', mark, 'running')[0]!.t,
    );

    const after = livePids();
    expect(after.influxdb).toBe(before.influxdb);
    expect(after.telemetry).toBe(before.telemetry);
    expect(after.api).not.toBe(before.api);
    expect(after.web).not.toBe(before.web);
    expect(h.component('api')?.version).toBe('1.5.0');
    expect(h.processesOf('api').find((p) => p.pid === after.api)?.argv).toContain('1.5.0');
  });

  it('kill -9 of the database restarts it, then api and web after it is healthy; telemetry is left alone', async () => {
    const before = livePids();
    const mark = agent.mark();
    process.kill(before.influxdb!, 'SIGKILL');
    const back = await agent.waitForLog(is.state('influxdb', 'running'), 15_000, mark, 'influxdb running again');
    const cascade = await agent.waitForLog(
      is.msg('hard dependency restarted: restarting its hard dependents'),
      10_000,
      mark,
      'the cascade',
    );
    expect(cascade).toMatchObject({ component: 'influxdb', stop_order: ['web', 'api'], start_order: ['api', 'web'] });
    const webBack = await agent.waitForLog(is.state('web', 'running'), 20_000, mark, 'web running again');

    // api and web restart only once the database is healthy again, web after api.
    const apiStart = componentLines('api', mark, 'starting')[0]!;
    expect(apiStart.t).toBeGreaterThanOrEqual(back.t);
    expect(componentLines('web', mark, 'starting')[0]!.t).toBeGreaterThanOrEqual(
      componentLines('api', mark, 'running')[0]!.t,
    );
    expect(webBack.t).toBeGreaterThanOrEqual(apiStart.t);
    // The ordering dependent is not touched: no state change, same process.
    expect(componentLines('telemetry', mark).filter((l) => l.state !== undefined)).toEqual([]);

    const after = livePids();
    expect(after.telemetry).toBe(before.telemetry);
    for (const name of ['influxdb', 'api', 'web']) expect(after[name], name).not.toBe(before[name]);
    expect(h.component('influxdb')?.restarts).toBe(1);
  });

  it('kill -9 of the agent and a new start restarts nothing', async () => {
    const before = livePids();
    const exit = await agent.kill9();
    expect(exit.signal).toBe('SIGKILL');
    // The components run in their own sessions: the agent's death is not theirs.
    expect(livePids()).toEqual(before);

    agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
    const rev = await fx.revisionId();
    const plan = await agent.waitForLog(
      is.revision(rev, 'reconcile plan'),
      15_000,
      0,
      'the reconcile after the restart',
    );
    expect(plan).toMatchObject({ stop_order: [], start_order: [], no_touch: STACK });
    const end = await agent.waitForLog(is.applyEnd, 10_000, 0, 'the end of the apply after the restart');
    // A restart resumes the revision it runs (SPEC §5): its outcome stands, everything adopted and healthy.
    expect(end.msg).toBe('resumed the revision applied last: its outcome stands (success); all components running');

    for (const name of STACK) {
      const adopted = agent.lines(is.about(name, 'adopted running instance'));
      expect(adopted, `adopted ${name}`).toHaveLength(1);
      expect(adopted[0]!.pid).toBe(before[name]);
      expect(agent.lines(is.about(name, 'reusing existing running instance (no restart)')), name).toHaveLength(1);
    }
    expect(agent.lines((l) => l.state === 'starting' || l.state === 'stopping' || l.state === 'installing')).toEqual(
      [],
    );
    expect(livePids()).toEqual(before);
  });

  it('after the restart the adopted instances are still supervised: kill -9 of the database cascades again', async () => {
    const before = livePids();
    const mark = agent.mark();
    // Not the new agent's child: its exit is noticed through /proc.
    process.kill(before.influxdb!, 'SIGKILL');
    await agent.waitForLog(is.about('influxdb', 'exited'), 5_000, mark, 'the exit noticed');
    const back = await agent.waitForLog(is.state('influxdb', 'running'), 15_000, mark, 'influxdb running again');
    await agent.waitForLog(
      is.msg('hard dependency restarted: restarting its hard dependents'),
      10_000,
      mark,
      'the cascade',
    );
    await agent.waitForLog(is.state('web', 'running'), 20_000, mark, 'web running again');
    expect(componentLines('api', mark, 'starting')[0]!.t).toBeGreaterThanOrEqual(back.t);
    expect(componentLines('telemetry', mark).filter((l) => l.state !== undefined)).toEqual([]);
    const after = livePids();
    expect(after.telemetry).toBe(before.telemetry);
    for (const name of ['influxdb', 'api', 'web']) expect(after[name], name).not.toBe(before[name]);
  });

  it('SIGTERM leaves the components running; with --stop-on-exit it stops them all', async () => {
    const before = livePids();
    const exit = await agent.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(agent.lines(is.msg('stopping: components keep running and are adopted at the next start'))).toHaveLength(1);
    expect(livePids()).toEqual(before);

    agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--stop-on-exit'] });
    await agent.waitForLog(is.applyEnd, 15_000, 0, 'the apply after the restart');
    expect(agent.lines(is.msg('adopted running instance'))).toHaveLength(STACK.length);
    const mark = agent.mark();
    expect(await agent.stop()).toEqual({ code: 0, signal: null });
    // Dependents first: the reverse of the start order.
    expect(agent.lines((l) => l.state === 'stopping', mark).map((l) => l.component)).toEqual([...STACK].reverse());
    for (const c of h.components()) expect(c.state, c.name).toBe('stopped');
    expect(h.processes().map((p) => `${p.pid} ${p.argv.join(' ')}`)).toEqual([]);
  });
});
