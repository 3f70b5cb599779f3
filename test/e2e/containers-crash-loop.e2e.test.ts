// A container that exits at once, through the real agent: the same bounded restarts and crash-loop limit as a
// process, its neighbours (a process and another container) untouched, and a redeploy with a fresh budget.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABELS } from '../../src/runtime/container-spec.js';
import { ContainerHarness } from '../support/container-harness.js';
import { is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, containersLabelled, ensureBusyboxImage } from '../support/busybox-image.js';
import { needs } from '../support/requirements.js';
import { engineRequirement, engineName } from '../support/test-engine.js';
import {
  asContainer,
  freePorts,
  sleeper,
  stackFixture,
  type ComponentSpec,
  type StackFixture,
} from '../support/stack-fixture.js';
import { docker, inspectOrUndefined } from '../runtime/container-fixtures.js';

/** The busybox test image is `docker import`ed (`podman import`ed) from the host's static busybox; the engine: KEYSTONE_TEST_ENGINE. */
const engine = needs(engineRequirement(), 'busybox');
const LIMIT = 3;

/**
 * `sh -c "exit 3"`, restart policy always. Its http check targets a closed port, so that only a live container
 * could pass it (an instant exit is never counted healthy, however late it is noticed): 25 × 200 ms start budget.
 */
function crasher(version: string, closedPort: number): ComponentSpec {
  return asContainer(
    'crasher',
    version,
    { image: BUSYBOX_IMAGE, command: ['sh', '-c', 'exit 3'] },
    {
      restartPolicy: 'always',
      health: {
        check: `http://127.0.0.1:${closedPort}/never`,
        interval: '200ms',
        timeout: '150ms',
        failureThreshold: 25,
      },
    },
  );
}

describe.skipIf(engine.skip)(
  engine.title(`a container that exits at once (a real ${engineName()} engine)`),
  { timeout: 60_000 },
  () => {
    let fx: StackFixture;
    let h: ContainerHarness;
    let agent: AgentProcess;
    let tag: string;
    let closed: number;
    let neighbours: { pid: number; steady: string };

    beforeAll(async () => {
      await ensureBusyboxImage();
      [closed] = (await freePorts(1)) as [number];
      const steady = asContainer('steady', '1.0.0', { image: BUSYBOX_IMAGE, command: ['sleep', '1000'] });
      fx = await stackFixture({ signed: false, components: () => [sleeper('neighbour'), steady] });
      h = new ContainerHarness();
      tag = h.tag;
    }, 90_000);
    afterAll(async () => {
      await h?.cleanup();
      fx?.cleanup();
    });

    const steadyId = () => {
      const i = h.component('steady')?.instance;
      return i?.kind === 'container' ? i.id : undefined;
    };
    /** The crasher's containers the engine still holds (running or exited). */
    const crasherContainers = () =>
      containersLabelled(LABELS.owner, tag).filter((id) => !neighbours || id !== neighbours.steady);
    const runningOf = async (ids: string[]) => {
      const out: string[] = [];
      for (const id of ids) if ((await inspectOrUndefined(id))?.State.Running) out.push(id);
      return out;
    };
    const stateLines = (name: string, after: number) =>
      agent.lines((l: LogLine) => l.component === name && l.state !== undefined, after);
    const restartNumbers = (after: number) =>
      agent.lines(is.state('crasher', 'backoff'), after).map((b) => {
        const m = /restart (\d+) in \d+ms/.exec(b.reason ?? '');
        expect(m, b.reason).not.toBeNull();
        return Number(m![1]);
      });
    const expectNeighboursUntouched = async (mark: number) => {
      expect(h.pidsOf().neighbour).toBe(neighbours.pid);
      expect(steadyId()).toBe(neighbours.steady);
      expect((await inspectOrUndefined(neighbours.steady))?.State.Running).toBe(true);
      for (const name of ['neighbour', 'steady']) expect(stateLines(name, mark), name).toEqual([]);
    };

    it('bounded restarts, then crash-looping and held; the apply fails; its neighbours are untouched', async () => {
      agent = h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--crash-loop-limit', String(LIMIT), '--max-backoff', '400ms'],
      });
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
      neighbours = { pid: h.pidsOf().neighbour!, steady: steadyId()! };

      const mark = agent.mark();
      fx.add(crasher('1.0.0', closed));
      const rev = await fx.revisionId();
      const failed = await agent.waitForLog(is.msgIncludes('apply failed'), 20_000, mark, 'the failed apply');
      expect(failed).toMatchObject({ revision: rev, failed: ['crasher'] });
      const looping = await agent.waitForLog(is.state('crasher', 'crash-looping'), 20_000, mark, 'crash-looping');
      expect(looping.reason).toMatch(new RegExp(`crash-looping after ${LIMIT} restarts`));

      expect(agent.lines(is.state('crasher', 'running'), mark), 'never counted as running').toEqual([]);
      expect(agent.lines(is.state('crasher', 'starting'), mark)).toHaveLength(LIMIT + 1);
      expect(restartNumbers(mark)).toEqual([1, 2, 3]);
      expect(h.component('crasher')).toMatchObject({ state: 'crash-looping', held: true, restarts: LIMIT });
      expect(h.history().find((e) => e.revision === rev)).toMatchObject({
        outcome: 'failure',
        failed: [{ name: 'crasher' }],
      });
      await expectNeighboursUntouched(mark);
      // Held stopped: nothing of it runs.
      expect(await runningOf(crasherContainers())).toEqual([]);
    });

    // Regression (was a bug): an exited container was never removed before the next one was created, so every restart
    // left one in the engine until the next agent start swept them. The removal runs beside the restart: poll for it.
    it("each exited container is removed: once it is held, the engine keeps none of the crasher's containers", async () => {
      const deadline = Date.now() + 15_000;
      while (crasherContainers().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(crasherContainers(), 'exited containers of the crasher left in the engine').toEqual([]);
    });

    it('a redeploy (a new version) starts with a fresh budget: restarts counted from 1 again, up to the limit', async () => {
      const mark = agent.mark();
      fx.bumpVersion('crasher', '1.0.1');
      const rev = await fx.revisionId();
      const plan = await agent.waitForLog(
        is.revision(rev, 'reconcile plan'),
        15_000,
        mark,
        'the reconcile of the redeploy',
      );
      expect(plan).toMatchObject({ start_order: ['crasher'], no_touch: ['neighbour', 'steady'] });
      const looping = await agent.waitForLog(
        is.state('crasher', 'crash-looping'),
        20_000,
        agent.logs.indexOf(plan),
        'crash-looping again',
      );
      await agent.waitForLog(is.applyEnd, 20_000, agent.logs.indexOf(plan), 'the end of the redeploy');
      expect(looping.reason).toMatch(new RegExp(`crash-looping after ${LIMIT} restarts`));
      expect(agent.lines(is.state('crasher', 'starting'), mark)).toHaveLength(LIMIT + 1);
      expect(restartNumbers(mark)).toEqual([1, 2, 3]);
      expect(h.component('crasher')).toMatchObject({
        version: '1.0.1',
        state: 'crash-looping',
        held: true,
        restarts: LIMIT,
      });
      await expectNeighboursUntouched(mark);

      // And a fix: a container that stays up runs, with its budget whole.
      const mark2 = agent.mark();
      Object.assign(fx.spec('crasher').container!, { command: ['sleep', '1000'] });
      fx.spec('crasher').health = undefined;
      fx.bumpVersion('crasher', '1.0.2');
      const fixedRev = await fx.revisionId();
      const fixPlan = await agent.waitForLog(
        is.revision(fixedRev, 'reconcile plan'),
        15_000,
        mark2,
        'the reconcile of the fix',
      );
      const end = await agent.waitForLog(is.applyEnd, 20_000, agent.logs.indexOf(fixPlan), 'the end of the fix');
      expect(end.msg).toBe('all components running');
      expect(h.component('crasher')).toMatchObject({ version: '1.0.2', state: 'running', held: false, restarts: 0 });
      const i = h.component('crasher')!.instance;
      expect(i?.kind).toBe('container');
      const info = await docker.getContainer(i?.kind === 'container' ? i.id : '').inspect();
      expect(info.State.Running).toBe(true);
      expect(info.Config.Labels?.[LABELS.hash]).toBe(h.component('crasher')!.hash);
      expect(await runningOf(crasherContainers())).toEqual([info.Id]);
      await expectNeighboursUntouched(mark2);
    });
  },
);
