// Outcomes across agent restarts for containers (issue 27, SPEC §5 "Outcomes are the truth, across restarts"): the real
// agent, a real Docker engine and the busybox test image. A container whose check never passes stays a failure after
// SIGTERM and kill -9 restarts: adopted (the same container, not restarted), probed, unhealthy "after the agent
// restarted", one history row. A healthy container is adopted, probed healthy, not restarted, and stays `running`; its
// revision is resumed without a new history row.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LABELS } from '../../src/runtime/container-spec.js';
import type { HistoryEntry } from '../../src/store/state-store.js';
import { is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, containersLabelled, ensureBusyboxImage } from '../support/busybox-image.js';
import { until } from '../support/composite-fixture.js';
import { ContainerHarness } from '../support/container-harness.js';
import { needs } from '../support/requirements.js';
import { engineRequirement, engineName } from '../support/test-engine.js';
import { asContainer, freePorts, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { inspectOrUndefined } from '../runtime/container-fixtures.js';

/** The busybox test image is `docker import`ed (`podman import`ed) from the host's static busybox; the engine: KEYSTONE_TEST_ENGINE. */
const engine = needs(engineRequirement(), 'busybox');

const RESUMED = 'resumed the revision applied last';
const CHECKING = 'checking the health of adopted instances';
const CHECKED = 'adopted instances checked';

const startsWith = (text: string) => (l: LogLine) => typeof l.msg === 'string' && l.msg.startsWith(text);
/** The first revision after a restart is settled: applied, or resumed (no new history row). */
const settledLine = (l: LogLine): boolean => is.applyEnd(l) || startsWith(RESUMED)(l);
const listField = (l: LogLine | undefined, key: string): string[] =>
  Array.isArray(l?.[key]) ? (l[key] as string[]).slice().sort() : [];
const rowsText = (rows: readonly HistoryEntry[]) =>
  rows.map((e) => `#${e.id} ${e.revision} ${e.outcome ?? 'unfinished'} ${e.summary ?? ''}`);

describe.skipIf(engine.skip)(
  engine.title(`outcomes of container components across agent restarts (a real ${engineName()} engine)`),
  { timeout: 120_000 },
  () => {
    let fx: StackFixture | undefined;
    let h: ContainerHarness | undefined;

    beforeAll(async () => {
      await ensureBusyboxImage();
    }, 90_000);
    afterEach(async () => {
      // The agents first (they would restart what is removed), then their containers by owner label.
      await h?.cleanup();
      fx?.cleanup();
      fx = undefined;
      h = undefined;
    });

    const containerOf = (name: string): string => {
      const inst = h!.component(name)?.instance;
      if (inst?.kind !== 'container') throw new Error(`${name} has no container instance`);
      return inst.id;
    };
    /** What says a container was not restarted: its id, its start time and its restart count. */
    const identity = async (id: string) => {
      const info = await inspectOrUndefined(id);
      return { id, running: info?.State.Running, startedAt: info?.State.StartedAt, restarts: info?.RestartCount };
    };
    const restart = async (
      agent: AgentProcess,
      how: 'SIGTERM' | 'kill -9',
      start: () => AgentProcess,
    ): Promise<AgentProcess> => {
      if (how === 'SIGTERM')
        expect(await agent.stop(), `the agent stops on SIGTERM\n${agent.tail()}`).toEqual({ code: 0, signal: null });
      else expect((await agent.kill9()).signal).toBe('SIGKILL');
      const next = start();
      await next.waitForLog(settledLine, 30_000, 0, 'the revision applied or resumed after the restart');
      await until(() => h!.history().every((e) => e.finishedAt !== undefined), 10_000, 'every history row finished');
      return next;
    };

    it('a container whose health check never passes: failure, and after SIGTERM and kill -9 restarts still one failure row, the same container adopted and found unhealthy', async () => {
      const [closed] = (await freePorts(1)) as [number];
      const box = asContainer(
        'box',
        '1.0.0',
        { image: BUSYBOX_IMAGE, command: ['sleep', '1000'] },
        {
          health: {
            check: `http://127.0.0.1:${closed}/never`,
            interval: '200ms',
            timeout: '150ms',
            failureThreshold: 5,
          },
        },
      );
      fx = await stackFixture({ components: () => [box] });
      h = new ContainerHarness();
      const start = () => h!.start({ dir: fx!.dir, plan: fx!.plan, trustArgs: fx!.trustArgs });
      const rev = await fx.revisionId();

      let agent = start();
      const end = await agent.waitForLog(is.applyEnd, 60_000, 0, 'the first apply');
      expect(end.msg).toMatch(/^apply failed/);
      await until(
        () => h!.history()[0]?.finishedAt !== undefined,
        10_000,
        'the history row of the first apply, finished',
      );
      const failed = h.history();
      expect(failed).toMatchObject([{ revision: rev, outcome: 'failure' }]);
      expect(h.component('box')?.state).toBe('unhealthy');
      const before = await identity(containerOf('box'));
      expect(before.running).toBe(true);

      for (const how of ['SIGTERM', 'kill -9'] as const) {
        agent = await restart(agent, how, start);
        expect(
          rowsText(h.history()),
          `the history after the ${how} restart: the one failure, nothing beside it`,
        ).toEqual(rowsText(failed));
        expect(h.history().filter((e) => e.outcome === 'success')).toEqual([]);
        // Adopted: the same container, never restarted, and the agent owns no other.
        expect(await identity(containerOf('box')), `box's container after the ${how} restart`).toEqual(before);
        expect(containersLabelled(LABELS.owner, h.tag)).toEqual([before.id]);
        expect(agent.lines(is.about('box', 'adopted running instance'))).toMatchObject([
          { container: before.id.slice(0, 12) },
        ]);
        // Probed after the restart, and found unhealthy.
        const checking = agent.lines(is.msg(CHECKING));
        expect(checking, `"${CHECKING}" after the ${how} restart\n${agent.tail()}`).toHaveLength(1);
        expect(listField(checking[0], 'components')).toEqual(['box']);
        const done = await agent.waitForLog(is.msg(CHECKED), 10_000, 0, `"${CHECKED}"`);
        expect(listField(done, 'unhealthy')).toEqual(['box']);
        expect(listField(done, 'healthy')).toEqual([]);
        const rec = await until(
          () => (h!.component('box')?.reason?.includes('after the agent restarted') ? h!.component('box') : undefined),
          10_000,
          'box unhealthy "after the agent restarted"',
        );
        expect(rec.state).toBe('unhealthy');
        expect(
          agent.lines((l) => l.state === 'starting' || l.state === 'stopping' || l.state === 'installing'),
          'nothing started or stopped',
        ).toEqual([]);
        expect(rowsText(h.history())).toEqual(rowsText(failed));
      }
    });

    it('a healthy container: after SIGTERM and kill -9 restarts it is adopted, probed healthy, not restarted, stays `running`, and no history row is added', async () => {
      const [port] = (await freePorts(1)) as [number];
      const web = asContainer(
        'web',
        '1.0.0',
        {
          image: BUSYBOX_IMAGE,
          network_mode: 'host',
          user: '65534:65534',
          command: ['httpd', '-f', '-p', String(port), '-h', '/www'],
        },
        { health: { check: `http://127.0.0.1:${port}/`, interval: '200ms', timeout: '1s', failureThreshold: 50 } },
      );
      fx = await stackFixture({ components: () => [web] });
      h = new ContainerHarness();
      const start = () =>
        h!.start({ dir: fx!.dir, plan: fx!.plan, trustArgs: fx!.trustArgs, args: ['--allow-host-namespaces'] });
      const rev = await fx.revisionId();

      let agent = start();
      expect((await agent.waitForLog(is.applyEnd, 60_000, 0, 'the first apply')).msg).toBe('all components running');
      await until(
        () => h!.history()[0]?.finishedAt !== undefined,
        10_000,
        'the history row of the first apply, finished',
      );
      const history = h.history();
      expect(history).toMatchObject([{ revision: rev, outcome: 'success' }]);
      const before = await identity(containerOf('web'));
      expect(before.running).toBe(true);

      for (const how of ['SIGTERM', 'kill -9'] as const) {
        agent = await restart(agent, how, start);
        expect(rowsText(h.history()), `the history after the ${how} restart: no new row`).toEqual(rowsText(history));
        expect(
          await identity(containerOf('web')),
          `web's container after the ${how} restart: adopted, not restarted`,
        ).toEqual(before);
        await agent.waitForLog(startsWith(RESUMED), 10_000, 0, `the revision resumed after the ${how} restart`);
        expect(agent.lines(startsWith(RESUMED)), 'resumed once').toHaveLength(1);
        const done = await agent.waitForLog(is.msg(CHECKED), 10_000, 0, `"${CHECKED}"`);
        expect(listField(agent.lines(is.msg(CHECKING))[0], 'components')).toEqual(['web']);
        expect(listField(done, 'healthy')).toEqual(['web']);
        expect(listField(done, 'unhealthy')).toEqual([]);
        expect(containersLabelled(LABELS.owner, h.tag)).toEqual([before.id]);
        expect(h.component('web')?.state).toBe('running');
        expect(
          agent.lines((l) => l.state === 'starting' || l.state === 'stopping' || l.state === 'installing'),
          'nothing started or stopped',
        ).toEqual([]);
        expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('keystone test page\n');
      }
    });
  },
);
