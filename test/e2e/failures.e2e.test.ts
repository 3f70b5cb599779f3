// What goes wrong, end to end with the real agent: a crash loop, a component that never becomes healthy,
// refused revisions (invalid, unsigned), and a stop that must reach grandchildren. Each scenario has its own
// repository, state directory and agent, so they run concurrently.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSameProcess, listProcesses } from '../../src/runtime/proc-identity.js';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { crasher, forker, freePorts, neverHealthy, sleeper, type StackFixture } from '../support/stack-fixture.js';
import { withStack } from '../support/with-stack.js';

const STACK = ['influxdb', 'api', 'telemetry', 'web'];

/** Runs `body` with a fixture and a harness, and always cleans both up. */

/** Starts the agent and waits for the end of its first apply. */
async function startConverged(h: AgentHarness, fx: StackFixture, args: string[] = []): Promise<AgentProcess> {
  const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args });
  const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the end of the first apply');
  expect(end.msg).toBe('all components running');
  return agent;
}

/** Applies what the fixture now holds: waits for the reconcile of that revision and the end of its apply. */
async function applied(agent: AgentProcess, fx: StackFixture, mark: number): Promise<{ plan: LogLine; end: LogLine }> {
  const rev = await fx.revisionId();
  const plan = await agent.waitForLog(is.revision(rev, 'reconcile plan'), 15_000, mark, `the reconcile of ${rev}`);
  const end = await agent.waitForLog(is.applyEnd, 30_000, agent.logs.indexOf(plan), `the end of the apply of ${rev}`);
  return { plan, end };
}

/** Waits for the refusal of the fixture's current revision. */
async function refused(agent: AgentProcess, fx: StackFixture, mark: number): Promise<LogLine> {
  const rev = await fx.revisionId();
  return agent.waitForLog(
    is.revision(rev, 'revision refused; still running the previous one'),
    15_000,
    mark,
    `the refusal of ${rev}`,
  );
}

const pidsOf = (h: AgentHarness, names: string[]) =>
  Object.fromEntries(Object.entries(h.pidsOf()).filter(([n]) => names.includes(n)));
const stateLines = (agent: AgentProcess, name: string, after = 0) =>
  agent.lines((l) => l.component === name && l.state !== undefined, after);

// Generous timeouts: the waits inside have their own, tighter deadlines.
describe.concurrent('failures, end to end', { timeout: 90_000 }, () => {
  it('a component that exits at once: restarts with growing gaps, then crash-looping; the apply fails; neighbours untouched; it stays stopped', async () => {
    await withStack({ signed: false }, async (fx, h) => {
      // 800ms cap: backoff delays of 100, ~200, ~400 and ~800 ms (±20 % jitter) all grow; a 400ms cap would make the last two equal.
      const agent = await startConverged(h, fx, ['--crash-loop-limit', '4', '--max-backoff', '800ms']);
      const neighbours = pidsOf(h, STACK);

      const mark = agent.mark();
      const [closed] = (await freePorts(1)) as [number];
      // Each instance stamps its own clock (to its stdout.log) once it runs, and exits at once: a stamp after each start
      // and before each exit.
      fx.add({ ...crasher('crasher', closed), args: ['-e', 'console.log(Date.now()); process.exit(3)'] });
      const rev = await fx.revisionId();
      const failed = await agent.waitForLog(is.msgIncludes('apply failed'), 15_000, mark, 'the failed apply');
      expect(failed).toMatchObject({ revision: rev, failed: ['crasher'] });
      expect(agent.lines(is.state('crasher', 'running'), mark), 'never counted as running').toEqual([]);
      const looping = await agent.waitForLog(is.state('crasher', 'crash-looping'), 15_000, mark, 'crash-looping');
      expect(looping.reason).toMatch(/crash-looping after 4 restarts/);

      // Four restarts, each announced with its delay, after its exit; each a new process.
      const starts = agent.lines(is.state('crasher', 'starting'), mark);
      const backoffs = agent.lines(is.state('crasher', 'backoff'), mark);
      expect(starts).toHaveLength(5);
      expect(backoffs).toHaveLength(4);
      const order = stateLines(agent, 'crasher', mark).filter((l) =>
        ['starting', 'backoff', 'crash-looping'].includes(l.state!),
      );
      expect(order.map((l) => l.state)).toEqual([
        'starting',
        'backoff',
        'starting',
        'backoff',
        'starting',
        'backoff',
        'starting',
        'backoff',
        'starting',
        'crash-looping',
      ]);
      expect(new Set(starts.map((l) => l.pid)).size).toBe(5);
      const announced = backoffs.map((b) => {
        const m = /restart (\d+) in (\d+)ms/.exec(b.reason ?? '');
        expect(m, b.reason).not.toBeNull();
        return { n: Number(m![1]), ms: Number(m![2]) };
      });
      expect(announced.map((a) => a.n)).toEqual([1, 2, 3, 4]);
      expect(announced[0]!.ms).toBe(100); // the first restart is immediate (about 100 ms)
      // Backoff of SPEC §5 with the 800 ms cap: 100 ms, then doubling with ±20 % jitter.
      announced.forEach((a, i) => {
        const base = Math.min(800, 100 * 2 ** i);
        if (i > 0) expect(a.ms, `delay ${a.n}`).toBeGreaterThanOrEqual(Math.floor(0.8 * base));
        expect(a.ms, `delay ${a.n}`).toBeLessThanOrEqual(Math.min(800, Math.ceil(1.2 * base)));
        if (i > 0)
          expect(a.ms, `announced delays ${announced.map((x) => x.ms).join(', ')}`).toBeGreaterThan(
            announced[i - 1]!.ms,
          );
      });
      // The gaps grow with the backoff: each restart waits at least its own delay, counted from the exit (the delay
      // "counts from the exit", component-worker.ts), and the delays grow. Measured from the instances' own stamps: one
      // taken before each exit, one after each start, so a measured gap can only be longer than the real one, never
      // shorter (2 ms: the stamps' and the timer's millisecond rounding). Only this lower bound is asserted: how much
      // longer a gap is depends on the machine's load (restart timings are bench/supervision.bench.ts's). Not the
      // agent's log lines either: its backoff line is written once the exit is recorded (a few store writes, up to
      // ~80 ms on a loaded machine), so from that line the next start comes sooner than the delay by as much (this
      // test failed so, with gaps 84, 158, 314, 641 ms for delays 100, 168, 374, 645 ms; issue 27).
      const stamps = readFileSync(join(h.stateDir, 'components', 'crasher', 'logs', 'stdout.log'), 'utf8')
        .trim()
        .split('\n')
        .map(Number);
      expect(stamps).toHaveLength(5);
      const gaps = stamps.slice(1).map((s, i) => s - stamps[i]!);
      const shown = `gaps ${gaps.join(', ')} ms (from an instance's stamp to the next one's) for delays ${announced.map((a) => a.ms).join(', ')} ms`;
      gaps.forEach((g, i) => expect(g, shown).toBeGreaterThanOrEqual(announced[i]!.ms - 2));

      // The apply that started it failed, in the log and in the store's history.
      const entry = h.history().find((e) => e.revision === rev);
      expect(entry).toMatchObject({ outcome: 'failure', failed: [{ name: 'crasher' }] });
      expect(h.component('crasher')).toMatchObject({ state: 'crash-looping', held: true, restarts: 4 });
      // Its neighbours were never touched.
      expect(pidsOf(h, STACK)).toEqual(neighbours);
      for (const name of STACK) expect(stateLines(agent, name, mark), name).toEqual([]);

      // It stays stopped: a later revision that does not change it leaves it held (and starts nothing). That revision
      // fails: one of its components is not running, and only an operator's stop is not held against it (SPEC §5).
      const mark2 = agent.mark();
      fx.edit(fx.plan, /^/, '# a comment: a new revision that changes no component\n');
      const { plan, end } = await applied(agent, fx, mark2);
      expect(plan).toMatchObject({
        stop_order: [],
        start_order: [],
        no_touch: ['influxdb', 'crasher', 'api', 'telemetry', 'web'],
      }); // in start order: crasher is in layer 0
      expect(end.msg).toMatch(/^apply failed: crasher \(crash-looping after 4 restarts/);
      expect(h.history()[0]).toMatchObject({
        revision: plan.revision,
        outcome: 'failure',
        failed: [{ name: 'crasher' }],
      });
      expect(h.history()[0]?.reconcile?.reasons.crasher).toMatch(/crash-looping/);
      expect(agent.lines(is.state('crasher', 'starting'), agent.logs.indexOf(looping))).toEqual([]);
      expect(h.component('crasher')?.state).toBe('crash-looping');
      expect(h.processesOf('crasher')).toEqual([]);

      // A revision that changes it starts it again with a fresh budget.
      const mark3 = agent.mark();
      Object.assign(fx.spec('crasher'), { command: 'sleep', args: ['1000'], health: undefined });
      fx.bumpVersion('crasher', '1.0.1');
      const fixed = await applied(agent, fx, mark3);
      expect(fixed.plan).toMatchObject({ start_order: ['crasher'], no_touch: STACK });
      expect(fixed.end.msg).toBe('all components running');
      expect(h.component('crasher')).toMatchObject({ state: 'running', held: false, restarts: 0 });
      expect(pidsOf(h, STACK)).toEqual(neighbours);
    });
  });

  it('a component that never becomes healthy: the apply fails within its budget, its dependents never start, an independent one does', async () => {
    const [closed] = (await freePorts(1)) as [number];
    const nh = neverHealthy('never-healthy', closed);
    const budgetMs = 200 * nh.health!.failureThreshold;
    await withStack(
      {
        signed: false,
        components: () => [nh, sleeper('dependent', [{ component: 'never-healthy', type: 'hard' }]), sleeper('lone')],
      },
      async (fx, h) => {
        const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
        const rev = await fx.revisionId();
        const failed = await agent.waitForLog(is.msgIncludes('apply failed'), 15_000, 0, 'the failed apply');
        expect(failed).toMatchObject({ revision: rev });
        expect([...(failed.failed as string[])].sort()).toEqual(['dependent', 'never-healthy']);

        // Given its whole budget (interval × failure_threshold), measured on the agent's own clock, then given up: the
        // order of the lines, not an upper bound in milliseconds (a loaded machine stretches it; timings are bench/'s).
        const started = agent.lines(is.state('never-healthy', 'starting'));
        expect(started).toHaveLength(1);
        const unhealthy = await agent.waitForLog(
          is.state('never-healthy', 'unhealthy'),
          1_000,
          0,
          'never-healthy unhealthy',
        );
        expect(unhealthy.reason).toBe('not healthy within its start budget of 1s');
        const took = unhealthy.t - started[0]!.t;
        expect(took, `gave up after ${took} ms`).toBeGreaterThanOrEqual(budgetMs - 200);
        expect(failed.t, 'the apply failed once the component was given up').toBeGreaterThanOrEqual(unhealthy.t);

        // Its dependent never started; the independent component did.
        expect(stateLines(agent, 'dependent').map((l) => l.state)).toEqual(['stopped']);
        expect(h.component('dependent')).toBeUndefined();
        expect(h.processesOf('dependent')).toEqual([]);
        expect(h.history()[0]).toMatchObject({
          revision: rev,
          outcome: 'failure',
          failed: expect.arrayContaining([
            { name: 'never-healthy', reason: 'not healthy within its start budget of 1s' },
            { name: 'dependent', reason: 'not started: dependency never-healthy is not healthy' },
          ]),
        });
        expect(h.component('lone')?.state).toBe('running');
        expect(agent.lines(is.state('lone', 'running'))).toHaveLength(1);
      },
    );
  });

  it('a stop during an apply does not wait out the start budget: the apply is left unfinished, not reported as failure, and the agent exits', async () => {
    const [closed] = (await freePorts(1)) as [number];
    // A start budget of 10 minutes: an agent that waited it out would outlive the test by far.
    const slow = {
      ...neverHealthy('slow', closed),
      health: { check: `http://127.0.0.1:${closed}/never`, interval: '1s', timeout: '500ms', failureThreshold: 600 },
    };
    await withStack(
      {
        signed: false,
        components: () => [sleeper('lone'), slow, sleeper('after', [{ component: 'slow', type: 'hard' }])],
      },
      async (fx, h) => {
        const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--stop-on-exit'] });
        await agent.waitForLog(is.state('slow', 'starting'), 15_000, 0, 'slow starting');
        const rev = await fx.revisionId();
        const exit = await agent.stop(20_000);
        expect(exit.code).toBe(0);
        // Interrupted is no outcome (SPEC §5): the row stays unfinished until the next start finishes it with the true one.
        expect(agent.lines(is.msgIncludes('apply failed'))).toEqual([]);
        expect(
          agent.lines((l) => l.revision === rev && typeof l.msg === 'string' && l.msg.startsWith('apply interrupted')),
        ).toHaveLength(1);
        expect(h.history()[0]).toMatchObject({ revision: rev });
        expect(h.history()[0]?.finishedAt).toBeUndefined();
        expect(h.history()[0]?.outcome).toBeUndefined();
        // Nothing was started after the stop began, and --stop-on-exit left nothing running.
        expect(agent.lines(is.state('after', 'starting'))).toEqual([]);
        for (const name of ['lone', 'slow', 'after']) expect(h.processesOf(name), name).toEqual([]);
      },
    );
  });

  it('with a trusted key: an unsigned edit is refused, a re-signed one applied, an invalid signed one refused; refusals stop nothing', async () => {
    await withStack({ signed: true }, async (fx, h) => {
      const agent = await startConverged(h, fx);
      expect(agent.lines(is.msg('signature verified'))).toHaveLength(1);
      const first = h.pidsOf();

      // 1. An edit without a new signature: KS_DIGEST_MISMATCH, recorded as rejected, nothing stopped.
      let mark = agent.mark();
      fx.bumpVersion('api', '1.5.0');
      const digest = await refused(agent, fx, mark);
      expect(digest.reason).toMatch(/^KS_DIGEST_MISMATCH: recipes\/api\.toml/);
      expect(h.history()[0]).toMatchObject({ revision: digest.revision, outcome: 'rejected', summary: digest.reason });
      expect(h.history()[0]?.reconcile).toBeUndefined();
      expect(agent.lines((l) => l.state !== undefined, mark)).toEqual([]);
      expect(h.pidsOf()).toEqual(first);

      // 2. The same edit, signed: applied (api and web restart).
      mark = agent.mark();
      await fx.sign();
      const bump = await applied(agent, fx, mark);
      expect(bump.plan).toMatchObject({
        stop_order: ['web', 'api'],
        start_order: ['api', 'web'],
        no_touch: ['influxdb', 'telemetry'],
      });
      expect(bump.end.msg).toBe('all components running');
      expect(h.component('api')?.version).toBe('1.5.0');
      const second = h.pidsOf();
      expect(second.influxdb).toBe(first.influxdb);
      expect(second.telemetry).toBe(first.telemetry);
      expect(second.api).not.toBe(first.api);

      // 3. An invalid recipe, properly signed: refused as invalid, the error names file and TOML path, nothing stopped.
      mark = agent.mark();
      fx.bumpVersion('web', '1.28.0'); // a valid change beside it must not be applied either
      fx.edit(fx.recipePath('telemetry'), 'interval = "500ms"', 'interval = "soon"');
      await fx.sign();
      const invalid = await refused(agent, fx, mark);
      expect(invalid.reason).toMatch(/^invalid: /);
      const diagnostics = agent.lines(
        (l) => l.revision === invalid.revision && l.level >= 50 && l.code !== undefined,
        mark,
      );
      expect(diagnostics.map((l) => l.msg).join('\n')).toMatch(
        /recipes\/telemetry\.toml.*lifecycle\.run\.health\.interval/,
      );
      expect(h.history()[0]).toMatchObject({ revision: invalid.revision, outcome: 'rejected' });
      expect(agent.lines((l) => l.state !== undefined || l.msg === 'reconcile plan', mark)).toEqual([]);
      expect(h.pidsOf()).toEqual(second);
      for (const c of h.components()) expect(c.state, c.name).toBe('running');
      expect(h.component('web')?.version).toBe('1.27.0');
      expect(h.appliedRevision()?.id).toBe(bump.plan.revision);
    });
  });

  it('a stop reaches grandchildren: a removed component leaves no process of its group behind', async () => {
    const stubborn = forker('stubborn-forker');
    // Ignored signals are inherited: the whole group ignores SIGTERM and needs the SIGKILL after the grace period.
    stubborn.args = ['-c', 'trap "" TERM; sleep 1000 & sleep 1000'];
    await withStack({ signed: false, components: () => [forker(), stubborn, sleeper('lone')] }, async (fx, h) => {
      const agent = await startConverged(h, fx, ['--grace', '500ms']);
      const pids = h.pidsOf();
      const group = (leader: number) =>
        listProcesses().filter((p) => (p.pgrp === leader || p.session === leader) && p.state !== 'Z');
      for (const name of ['forker', 'stubborn-forker']) {
        const members = group(pids[name]!);
        expect(members.length, `${name}'s group has its child and the background grandchild`).toBeGreaterThanOrEqual(2);
        expect(members.filter((p) => p.pid !== pids[name]).length).toBeGreaterThanOrEqual(1);
      }

      const mark = agent.mark();
      fx.remove('forker');
      fx.remove('stubborn-forker');
      const { plan, end } = await applied(agent, fx, mark);
      expect([...(plan.stop_order as string[])].sort()).toEqual(['forker', 'stubborn-forker']);
      expect(plan).toMatchObject({ start_order: [], no_touch: ['lone'] });
      expect(end.msg).toBe('all components running');
      for (const name of ['forker', 'stubborn-forker']) {
        expect(group(pids[name]!), `${name}'s group`).toEqual([]);
        expect(h.processesOf(name), `processes in ${name}'s work directory`).toEqual([]);
        expect(h.component(name)).toBeUndefined();
      }
      // The stubborn group outlived SIGTERM: it took the grace period and a SIGKILL.
      const stopping = agent.lines(is.state('stubborn-forker', 'stopping'), mark)[0]!;
      const removed = agent.lines(is.about('stubborn-forker', 'removed'), mark)[0]!;
      expect(removed.t - stopping.t).toBeGreaterThanOrEqual(450);
      const lone = h.component('lone')?.instance;
      expect(lone?.kind === 'process' && lone.pid === pids.lone && isSameProcess(lone.pid, lone.startTime)).toBe(true);
    });
  });

  // Regression (was a bug): an adopted instance that exits before this agent process has applied any revision crashes the agent.
  // ComponentWorker.adopt() is called with `desired = undefined` (Engine.adoptAll) and starts supervise(); when
  // the adopted process exits, the exit handler calls decide(), which reads `this.desired!.recipe…` and throws a
  // TypeError inside a `void inst.exited.then(…)`: an unhandled rejection, and the agent exits with code 1 —
  // supervision of every component stops. It happens whenever the first revision after a restart is refused
  // (unsigned, invalid, replayed: the agent "keeps running what it has") or simply has not been applied yet (the
  // same race exists in adoptAll for a record caught mid-start: it adopts, stops the instance, and the poll
  // notices the exit ~200 ms later, before the first apply invalidates the worker if loading is slow).
  it('an adopted component that exits before any revision is applied does not take the agent down', async () => {
    await withStack({ signed: true, components: () => [sleeper('lone'), sleeper('other')] }, async (fx, h) => {
      const first = await startConverged(h, fx);
      await first.kill9();
      fx.bumpVersion('lone', '1.0.1'); // not signed: the next start keeps running what it has
      const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      await refused(agent, fx, 0);
      expect(agent.lines(is.msg('adopted running instance'))).toHaveLength(2);

      const lone = h.pidsOf().lone!;
      process.kill(lone, 'SIGKILL');
      await agent.waitForLog(is.about('lone', 'exited'), 5_000, 0, 'the exit of lone noticed');
      // The agent must survive it, and a signed revision must then bring lone back.
      const mark = agent.mark();
      await fx.sign();
      const { end } = await applied(agent, fx, mark);
      expect(end.msg).toBe('all components running');
      expect(h.component('lone')).toMatchObject({ state: 'running', version: '1.0.1' });
      expect(h.pidsOf().lone).not.toBe(lone);
      expect(agent.exit).toBeUndefined();
    });
  });

  // Regression (was a bug): an adopted process that dies is never restarted under restart_policy = "on-failure". After an agent
  // restart the process is no longer the agent's child, so ProcessRuntime.adopt() reports its exit as
  // { code: null, signal: null } (unknowable); decideRestart() → isFailure() treats that as a clean exit, and the
  // worker records `failed` with the misleading reason 'exited with code null (exited 0 and restart_policy is
  // "on-failure")'. A crash (here: kill -9) of any on-failure component that survived an agent restart leaves it
  // down for good. Suggested fix: an unknown exit status counts as a failure (isFailure: code !== 0 || signal !==
  // null, i.e. only a known 0 is clean), and describeExit says "exited (status unknown: not the agent's child)".
  it('an on-failure component adopted after an agent restart is restarted when it is killed', async () => {
    const flaky = sleeper('flaky');
    flaky.restartPolicy = 'on-failure';
    await withStack({ signed: false, components: () => [flaky] }, async (fx, h) => {
      const first = await startConverged(h, fx);
      await first.kill9();
      const agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      await agent.waitForLog(is.applyEnd, 15_000, 0, 'the apply after the restart');
      expect(agent.lines(is.about('flaky', 'adopted running instance'))).toHaveLength(1);

      const pid = h.pidsOf().flaky!;
      const mark = agent.mark();
      process.kill(pid, 'SIGKILL');
      const next = await agent.waitForLog(
        (l) => l.component === 'flaky' && l.state !== undefined,
        5_000,
        mark,
        'what follows the kill',
      );
      expect(next, `${next.state}: ${next.reason}`).toMatchObject({ state: 'backoff' });
      await agent.waitForLog(is.state('flaky', 'running'), 5_000, mark, 'flaky running again');
      expect(h.pidsOf().flaky).not.toBe(pid);
    });
  });
});
