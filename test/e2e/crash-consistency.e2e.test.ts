// Crash consistency (issue 4): the agent is killed with SIGKILL at every instrumented point of an apply
// (KEYSTONE_CRASH_AT), then started again without it. It must converge: every desired component running exactly
// once, no process left over from the killed agent that nobody records, and a consistent state store.
import { describe, expect, it } from 'vitest';
import { CRASH_POINTS, type CrashPoint } from '../../src/agent/crash-point.js';
import { isAlive, readProcStat } from '../../src/runtime/proc-identity.js';
import { AgentHarness, is, type AgentProcess, type ProcInfo } from '../support/agent-harness.js';
import { stackFixture, type StackFixture } from '../support/stack-fixture.js';

const STACK = ['influxdb', 'api', 'telemetry', 'web'];

type Change = 'fresh device' | 'bump of api';

interface Scenario {
  change: Change;
  point: CrashPoint;
}

/** A fresh device stops nothing, so `after-stop` is only reached by the bump (stop web and api, start them again). */
const SCENARIOS: Scenario[] = [
  ...CRASH_POINTS.filter((p) => p !== 'after-stop').map((point): Scenario => ({ change: 'fresh device', point })),
  ...CRASH_POINTS.map((point): Scenario => ({ change: 'bump of api', point })),
];

/** Children of the live agent that come and go: cmd: health probes and install scripts (setpriv, then sh -c). */
function isHelperOf(agent: AgentProcess, p: ProcInfo): boolean {
  return p.stat.ppid === agent.pid && (p.argv[0]?.endsWith('/setpriv') === true || p.argv[0] === '/bin/sh');
}

async function assertConverged(h: AgentHarness, agent: AgentProcess, fx: StackFixture): Promise<void> {
  expect(agent.exit, 'the restarted agent is still running').toBeUndefined();
  const rev = await fx.revisionId();
  expect(h.appliedRevision()?.id).toBe(rev);

  // The store: no unfinished apply, the last one a success, every record running with the very process it names.
  const history = h.history();
  expect(
    history.filter((e) => e.finishedAt === undefined),
    'unfinished applies',
  ).toEqual([]);
  expect(history[0]).toMatchObject({ revision: rev, outcome: 'success' });
  const records = h.components();
  expect(records.map((c) => c.name)).toEqual(STACK);
  const recorded = new Map<number, string>();
  for (const c of records) {
    expect(c.state, `${c.name}: ${c.reason ?? ''}`).toBe('running');
    expect(c.version).toBe(fx.spec(c.name).version);
    if (c.instance?.kind !== 'process') throw new Error(`${c.name} has no process instance`);
    expect(isAlive(c.instance.pid), `${c.name}'s pid ${c.instance.pid} is alive`).toBe(true);
    expect(readProcStat(c.instance.pid)?.startTime, `${c.name}'s start time in /proc/${c.instance.pid}/stat`).toBe(
      c.instance.startTime,
    );
    recorded.set(c.instance.pid, c.name);
  }

  // The processes: exactly one instance per component (the recorded one), and nothing nobody accounts for.
  for (const name of STACK) {
    const artifact = fx.spec(name).artifact!;
    const instances = h.processesOf(name).filter((p) => p.argv.includes(artifact));
    expect(
      instances.map((p) => `${p.pid} ${p.argv.join(' ')}`),
      `instances of ${name}`,
    ).toEqual(instances.filter((p) => recorded.get(p.pid) === name).map((p) => `${p.pid} ${p.argv.join(' ')}`));
    expect(instances, `instances of ${name}`).toHaveLength(1);
  }
  const orphans = h.processes().filter((p) => !recorded.has(p.stat.session) && !isHelperOf(agent, p));
  expect(
    orphans.map((p) => `${p.pid} (session ${p.stat.session}, parent ${p.stat.ppid}) ${p.argv.join(' ')} in ${p.cwd}`),
    'processes no record accounts for',
  ).toEqual([]);
}

/**
 * Regression (was a bug, after-start-record): a record caught mid-start (`starting`, with a live instance) makes the restarted agent
 * crash with a TypeError when the instance's exit is noticed before the first apply reaches that component.
 * Engine.adoptAll() calls worker.adopt(inst, undefined, …) — which starts supervise() with `desired` undefined
 * and an exit poll every 200 ms — and then stops the instance itself (runtime.stop), without invalidating the
 * worker. When the poll sees the process gone, the exit handler calls decide(), which reads
 * `this.desired!.recipe…`: TypeError in a `void …then()`, an unhandled rejection, exit code 1. It is a race (the
 * first apply's worker.start() invalidates the generation and wins when loading is quick; under load it loses:
 * seen in this suite on the bump), and it is certain when the first revision after the restart is refused, which
 * is how these two cases force it. Fix: in adoptAll, stop a mid-start instance without adopting it (or call
 * worker.detach() after the stop), and make the supervise() exit handler a no-op while `desired` is undefined
 * (record the state, leave the restart to the next apply). See also the adopted-exit regression in failures.e2e.test.ts.
 */
const RACY_POINTS: ReadonlySet<CrashPoint> = new Set(['after-start-record']);

async function runScenario({ change, point }: Scenario, opts: { refuseFirst?: boolean } = {}): Promise<void> {
  // A refused first revision needs a trusted key (an unsigned edit is what is refused).
  const fx = await stackFixture({ signed: opts.refuseFirst === true });
  const h = new AgentHarness();
  const start = (env?: Record<string, string>) =>
    h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, ...(env && { env }) });
  try {
    if (change === 'bump of api') {
      const first = start();
      const end = await first.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
      expect(end.msg).toBe('all components running');
      await first.kill9();
      fx.bumpVersion('api', '1.5.0');
      if (fx.signed) await fx.sign();
    }
    const doomed = start({ KEYSTONE_CRASH_AT: point });
    const died = await doomed.waitForExit(30_000);
    expect(died.signal, `the agent killed itself at ${point}\n${doomed.tail()}`).toBe('SIGKILL');
    expect(doomed.lines(is.applyEnd), 'the crash came before the end of the apply').toEqual([]);

    let again: AgentProcess;
    if (opts.refuseFirst) {
      // The directory now holds an unsigned edit: the restarted agent adopts what it can and keeps it running.
      fx.bumpVersion('telemetry', '1.29.1');
      again = start();
      const refusedRev = await fx.revisionId();
      await again.waitForLog(
        is.revision(refusedRev, 'revision refused; still running the previous one'),
        20_000,
        0,
        'the refusal',
      );
      // Instances it found mid-start were stopped at adoption; their exit (noticed within a 200 ms poll) must not
      // take the agent down. A bounded wait for an exit that must not come.
      const exit = await again.waitForExit(1_500).catch(() => undefined);
      expect(exit, `the agent exited after the adoption\n${again.tail()}`).toBeUndefined();
      await fx.sign();
    } else again = start();

    const rev = await fx.revisionId();
    await again.waitForLog(is.revision(rev, 'reconcile plan'), 20_000, 0, 'the reconcile after the crash');
    await again.waitForLog(is.applyEnd, 30_000, 0, 'the end of the apply after the crash');
    await assertConverged(h, again, fx);
    // A crash between a spawn and its record leaves a process no record names: the restarted agent finds it by
    // its owner mark and removes it before it adopts anything. At every other point there is nothing to sweep.
    const swept = again.lines(is.msg('removed an unrecorded process this agent started before it stopped'));
    if (point === 'after-spawn')
      expect(swept).toMatchObject([{ component: change === 'fresh device' ? 'influxdb' : 'api' }]);
    else expect(swept).toEqual([]);
    // Every point lies inside an apply: the restarted agent found it open (SPEC §5: cut short is not an outcome).
    expect(
      again.lines(
        is.msg('the previous apply was interrupted: applying that revision again finishes it with its true outcome'),
      ),
    ).toHaveLength(1);
    if (opts.refuseFirst) {
      // Another revision came first: the open row is closed as interrupted, with no report, and a row of its own follows.
      expect(h.history().filter((e) => e.summary?.startsWith('interrupted'))).toMatchObject([{ outcome: 'failure' }]);
    } else {
      // The same revision: its apply finished the very row the killed agent began, with its true outcome.
      expect(h.history().filter((e) => e.summary?.startsWith('interrupted'))).toEqual([]);
      expect(
        h
          .history()
          .filter((e) => e.revision === rev)
          .map((e) => e.outcome),
      ).toEqual(['success']);
    }
  } finally {
    await h.cleanup();
    fx.cleanup();
  }
}

describe.concurrent('kill -9 of the agent at every crash point of an apply, then a restart', () => {
  for (const s of SCENARIOS) {
    const name = `${s.change}, killed at ${s.point}: converges with no duplicate, no orphan and a consistent store`;
    // A racy point would make this test flaky: it runs in the form that makes the race certain (see RACY_POINTS).
    if (RACY_POINTS.has(s.point))
      it(
        `${name}, even when the first revision after the restart is refused`,
        () => runScenario(s, { refuseFirst: true }),
        90_000,
      );
    else it(name, () => runScenario(s), 90_000);
  }

  it('every crash point is exercised', () => {
    expect(new Set(SCENARIOS.map((s) => s.point))).toEqual(new Set(CRASH_POINTS));
  });
});
