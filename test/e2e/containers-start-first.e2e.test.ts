// update_strategy = "start-first" for a container, through the real agent and engine: the new container starts while
// the old one runs, the old one is stopped and removed only once the new one is healthy, and a roll to a broken image
// keeps the old container serving (the apply fails).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerHarness } from '../support/container-harness.js';
import { is, type AgentProcess } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../support/busybox-image.js';
import { needs } from '../support/requirements.js';
import { engineRequirement, engineName } from '../support/test-engine.js';
import { asContainer, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { inspectOrUndefined } from '../runtime/container-fixtures.js';

/** The busybox test image is `docker import`ed (`podman import`ed) from the host's static busybox; the engine: KEYSTONE_TEST_ENGINE. */
const engine = needs(engineRequirement(), 'busybox');

describe.skipIf(engine.skip)(
  engine.title(`a start-first container roll (a real ${engineName()} engine)`),
  { timeout: 60_000 },
  () => {
    let fx: StackFixture;
    let h: ContainerHarness;
    let agent: AgentProcess;

    beforeAll(async () => {
      await ensureBusyboxImage();
      const worker = asContainer(
        'worker',
        '1.0.0',
        { image: BUSYBOX_IMAGE, command: ['sleep', '1000'] },
        { updateStrategy: 'start-first', health: { check: 'cmd:true', interval: '200ms', failureThreshold: 10 } },
      );
      fx = await stackFixture({ signed: false, components: () => [worker] });
      h = new ContainerHarness();
      agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
    }, 90_000);
    afterAll(async () => {
      await h?.cleanup();
      fx?.cleanup();
    });

    const workerId = () => {
      const i = h.component('worker')?.instance;
      return i?.kind === 'container' ? i.id : undefined;
    };

    it('starts the new container beside the old one and removes the old one once the new one is healthy', async () => {
      const old = workerId()!;
      const mark = agent.mark();
      fx.bumpVersion('worker', '1.1.0');
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the roll');
      expect(end.msg).toBe('all components running');
      const lines = agent.lines((l) => l.component === 'worker', mark).map((l) => l.msg ?? `state=${l.state}`);
      // Never stopped first: the new container is started and healthy before the old one is stopped.
      expect(lines.indexOf('rolling: new instance started')).toBeGreaterThanOrEqual(0);
      expect(lines.indexOf('rolling: new instance healthy; stopping the old one')).toBeGreaterThan(
        lines.indexOf('rolling: new instance started'),
      );
      expect(lines.filter((m) => m === 'state=stopping' || m === 'state=stopped')).toEqual([]);
      const now = workerId()!;
      expect(now).not.toBe(old);
      expect((await inspectOrUndefined(now))?.State.Running).toBe(true);
      expect(await inspectOrUndefined(old)).toBeUndefined();
      expect(h.component('worker')).toMatchObject({ state: 'running', version: '1.1.0' });
    });

    it('a roll to an image that is not there keeps the old container serving, and the apply fails', async () => {
      const old = workerId()!;
      const mark = agent.mark();
      fx.edit(fx.recipePath('worker'), `image = "${BUSYBOX_IMAGE}"`, 'image = "keystone-test/not-here:1"');
      fx.edit(fx.recipePath('worker'), 'version = "1.1.0"', 'version = "1.2.0"');
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the failed roll');
      expect(end.msg).toMatch(/^apply failed: .*worker.*old instance keeps serving/);
      expect(workerId()).toBe(old);
      expect((await inspectOrUndefined(old))?.State.Running).toBe(true);
      expect(h.component('worker')).toMatchObject({ state: 'running', version: '1.1.0' });
    });
  },
);
