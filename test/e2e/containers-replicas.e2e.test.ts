// `replicas = N` for a container, through the real agent and engine: one container per slot (`worker/1` …), labelled
// with its slot; scaling up starts only the new slots, scaling down removes the highest, 0 removes them all, and the
// slots are adopted (not recreated) across an agent restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABELS } from '../../src/runtime/container-spec.js';
import { ContainerHarness } from '../support/container-harness.js';
import { is, type AgentProcess } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, containersLabelled, ensureBusyboxImage } from '../support/busybox-image.js';
import { needs } from '../support/requirements.js';
import { engineRequirement, engineName } from '../support/test-engine.js';
import { asContainer, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { inspectOrUndefined } from '../runtime/container-fixtures.js';

/** The busybox test image is `docker import`ed (`podman import`ed) from the host's static busybox; the engine: KEYSTONE_TEST_ENGINE. */
const engine = needs(engineRequirement(), 'busybox');

describe.skipIf(engine.skip)(
  engine.title(`container replicas (a real ${engineName()} engine)`),
  { timeout: 60_000 },
  () => {
    let fx: StackFixture;
    let h: ContainerHarness;
    let agent: AgentProcess;
    let tag: string;

    beforeAll(async () => {
      await ensureBusyboxImage();
      const worker = asContainer(
        'worker',
        '1.0.0',
        { image: BUSYBOX_IMAGE, command: ['sleep', '1000'] },
        { replicas: 3, health: { check: 'cmd:true', interval: '200ms', failureThreshold: 10 } },
      );
      fx = await stackFixture({ signed: false, components: () => [worker] });
      h = new ContainerHarness();
      tag = h.tag;
      agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
    }, 90_000);
    afterAll(async () => {
      await h?.cleanup();
      fx?.cleanup();
    });

    /** Slot → container id, from the agent's records. */
    const slots = (): Record<string, string> =>
      Object.fromEntries(
        h
          .components()
          .filter((c) => c.name.startsWith('worker/') && c.instance?.kind === 'container' && c.state === 'running')
          .map((c) => [c.name, c.instance!.kind === 'container' ? c.instance!.id : '']),
      );
    const owned = () => containersLabelled(LABELS.owner, tag).sort();

    it('runs one container per slot, each labelled with its slot', async () => {
      const s = slots();
      expect(Object.keys(s).sort()).toEqual(['worker/1', 'worker/2', 'worker/3']);
      expect(owned()).toEqual(Object.values(s).sort());
      for (const [slot, id] of Object.entries(s))
        expect((await inspectOrUndefined(id))?.Config.Labels?.[LABELS.component]).toBe(slot);
    });

    it('scaling up starts only the new slots; scaling down removes the highest', async () => {
      const before = slots();
      let mark = agent.mark();
      fx.edit(fx.recipePath('worker'), 'replicas = 3', 'replicas = 5');
      expect((await agent.waitForLog(is.applyEnd, 30_000, mark, 'scale to 5')).msg).toBe('all components running');
      const up = slots();
      expect(Object.keys(up).sort()).toEqual(['worker/1', 'worker/2', 'worker/3', 'worker/4', 'worker/5']);
      for (const slot of ['worker/1', 'worker/2', 'worker/3']) expect(up[slot]).toBe(before[slot]);

      mark = agent.mark();
      fx.edit(fx.recipePath('worker'), 'replicas = 5', 'replicas = 2');
      await agent.waitForLog(is.applyEnd, 30_000, mark, 'scale to 2');
      const down = slots();
      expect(down).toEqual({ 'worker/1': before['worker/1'], 'worker/2': before['worker/2'] });
      expect(owned()).toEqual(Object.values(down).sort());
    });

    it('an agent restart adopts every slot: the same container ids, nothing recreated', async () => {
      const before = slots();
      await agent.kill9();
      agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      await agent.waitForLog(is.applyEnd, 30_000, 0, 'the apply after the restart');
      expect(slots()).toEqual(before);
      expect(owned()).toEqual(Object.values(before).sort());
    });

    it('replicas = 0 removes every slot and its container', async () => {
      const mark = agent.mark();
      fx.edit(fx.recipePath('worker'), 'replicas = 2', 'replicas = 0');
      await agent.waitForLog(is.applyEnd, 30_000, mark, 'scale to 0');
      expect(slots()).toEqual({});
      expect(owned()).toEqual([]);
    });
  },
);
