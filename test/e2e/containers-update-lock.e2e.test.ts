// An update lock on a container (SPEC §19), through the real agent and engine: the lock's directory is mounted at the
// same path from the container's root (the container makes its lock file there), and while a process holds a flock on
// that file the container is not replaced for a new revision; let go, it is, at once. (The test image has no flock
// of its own: the lock is held from the host, on the very file the container made, as a sidecar or a shell would.)
import type { ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerHarness } from '../support/container-harness.js';
import { is, type AgentProcess } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../support/busybox-image.js';
import { until } from '../support/composite-fixture.js';
import { holdLock, letGo } from '../support/lock-holder.js';
import { needs } from '../support/requirements.js';
import { engineRequirement, engineName } from '../support/test-engine.js';
import { asContainer, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const engine = needs(engineRequirement(), 'busybox');

describe.skipIf(engine.skip)(
  engine.title(`an update lock on a container (a real ${engineName()} engine)`),
  { timeout: 90_000 },
  () => {
    let fx: StackFixture;
    let h: ContainerHarness;
    let agent: AgentProcess;
    let holder: ChildProcess | undefined;

    beforeAll(async () => {
      await ensureBusyboxImage();
      const worker = asContainer(
        'worker',
        '1.0.0',
        { image: BUSYBOX_IMAGE, command: ['sh', '-c', 'touch /tmp/lockdir/updates.lock && exec sleep 1000'] },
        { updateLock: { lock: 'tmp/lockdir/updates.lock' } },
      );
      fx = await stackFixture({ signed: false, components: () => [worker] });
      h = new ContainerHarness();
      agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
    }, 90_000);
    afterAll(async () => {
      if (holder) letGo(holder);
      await h?.cleanup();
      fx?.cleanup();
    });

    const workerId = () => {
      const i = h.component('worker')?.instance;
      return i?.kind === 'container' ? i.id : undefined;
    };

    it('the container made its lock file in the mounted directory; held, a new revision waits; let go, it is applied', async () => {
      const lockFile = join(h.workDir('worker'), 'tmp', 'lockdir', 'updates.lock');
      await until(() => existsSync(lockFile), 10_000, 'the container to make its lock file');
      expect(statSync(join(h.workDir('worker'), 'tmp', 'lockdir')).mode & 0o7777).toBe(0o1777);
      holder = await holdLock(lockFile);
      const old = workerId()!;
      const mark = agent.mark();
      fx.bumpVersion('worker', '1.1.0');
      await agent.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('held: worker holds its update lock'),
        20_000,
        mark,
        'the revision to wait',
      );
      expect(agent.lines(is.msg('reconcile plan'), mark)).toEqual([]);
      expect(workerId()).toBe(old);

      letGo(holder);
      holder = undefined;
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the apply once the lock is let go');
      expect(end.msg).toBe('all components running');
      expect(workerId()).not.toBe(old);
      expect(h.component('worker')).toMatchObject({ state: 'running', version: '1.1.0' });
    });
  },
);
