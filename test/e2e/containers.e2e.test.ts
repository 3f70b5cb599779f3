// The worked example with `web` as a container (plans/edge.toml), end to end: the real agent process, the real
// stand-ins for influxdb, api and telemetry, and busybox httpd in a container of the real Docker engine on the host
// network. One agent's life: fresh apply, api bumped, influxdb restarted through the API, kill -9 of the agent and
// adoption, a crash right after a container was created (the leftover goes at the next start), and a stop. A foreign
// container (`docker run -d`, no Keystone labels) runs beside it all and is never touched.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSameProcess } from '../../src/runtime/proc-identity.js';
import { LABELS } from '../../src/runtime/container-spec.js';
import { ContainerHarness } from '../support/container-harness.js';
import { is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, containersLabelled, ensureBusyboxImage } from '../support/busybox-image.js';
import { needs } from '../support/requirements.js';
import { engineCli, engineRequirement, engineName } from '../support/test-engine.js';
import { containerStack, freePorts, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { docker, inspectOrUndefined } from '../runtime/container-fixtures.js';

const STACK = ['influxdb', 'api', 'telemetry', 'web'];
const PROCESSES = ['influxdb', 'api', 'telemetry'];
/** The busybox test image is `docker import`ed (`podman import`ed) from the host's static busybox; the engine: KEYSTONE_TEST_ENGINE. */
const engine = needs(engineRequirement(), 'busybox');
const cli = engineCli();

describe.skipIf(engine.skip)(
  engine.title(`the worked example with web as a container (a real ${engineName()} engine)`),
  { timeout: 60_000 },
  () => {
    let fx: StackFixture;
    let h: ContainerHarness;
    let agent: AgentProcess;
    let tag: string;
    let apiPort: number;
    let foreignId: string;
    let foreignStartedAt: string;
    const foreignName = `ks-foreign-${randomBytes(4).toString('hex')}`;

    beforeAll(async () => {
      await ensureBusyboxImage();
      fx = await stackFixture({ signed: false, components: containerStack(BUSYBOX_IMAGE) });
      h = new ContainerHarness();
      tag = h.tag;
      [apiPort] = (await freePorts(1)) as [number];
      // Someone else's container on the same engine, there before the agent: no Keystone label at all.
      const run = spawnSync(
        cli.cmd,
        [...cli.args, 'run', '-d', '--name', foreignName, BUSYBOX_IMAGE, 'sleep', '1000'],
        { encoding: 'utf8' },
      );
      if (run.status !== 0) throw new Error(`${cli.cmd} run of the foreign container failed: ${run.stderr}`);
      foreignId = run.stdout.trim();
    }, 90_000);
    afterAll(async () => {
      // The agents first (they would restart what is removed), then their containers by owner label, then the foreign one.
      await h?.cleanup();
      spawnSync(cli.cmd, [...cli.args, 'rm', '-f', foreignName], { stdio: 'ignore' });
      fx?.cleanup();
    });

    const start = (env?: Record<string, string>, more: string[] = []) =>
      h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--allow-host-namespaces', '--listen', `127.0.0.1:${apiPort}`, ...more],
        ...(env && { env }),
      });

    /** Every component running; the processes are the recorded ones (pid and start time), web's container runs. */
    const live = async () => {
      const ids: Record<string, number | string> = {};
      for (const c of h.components()) {
        expect(c.state, `${c.name} state`).toBe('running');
        if (c.instance?.kind === 'process') {
          expect(
            isSameProcess(c.instance.pid, c.instance.startTime),
            `${c.name}'s pid ${c.instance.pid} is the recorded process`,
          ).toBe(true);
          ids[c.name] = c.instance.pid;
        } else if (c.instance?.kind === 'container') {
          expect(
            (await inspectOrUndefined(c.instance.id))?.State.Running,
            `${c.name}'s container ${c.instance.id} runs`,
          ).toBe(true);
          ids[c.name] = c.instance.id;
        }
      }
      expect(Object.keys(ids).sort()).toEqual([...STACK].sort());
      expect(h.component('web')?.instance?.kind).toBe('container');
      for (const name of PROCESSES) expect(h.component(name)?.instance?.kind, name).toBe('process');
      return ids;
    };
    /** The agent's containers, as the engine lists them by owner label (running or not). */
    const owned = () => containersLabelled(LABELS.owner, tag);
    const page = async () => (await fetch(`http://127.0.0.1:${fx.ports.web}/`)).text();
    const foreignUntouched = async () => {
      const info = await inspectOrUndefined(foreignId);
      expect(info?.State.Running, 'the foreign container runs').toBe(true);
      expect(info?.RestartCount).toBe(0);
      expect(info?.State.StartedAt).toBe(foreignStartedAt);
    };
    const componentLines = (name: string, after: number, state?: string) =>
      agent.lines((l: LogLine) => l.component === name && (state === undefined || l.state === state), after);
    const indexOf = (pred: (l: LogLine) => boolean, after: number) =>
      agent.logs.findIndex((l, i) => i >= after && pred(l));

    it('a fresh apply brings all four up: web is a container on the host network, serving its page', async () => {
      foreignStartedAt = (await inspectOrUndefined(foreignId))!.State.StartedAt;
      agent = start();
      const rev = await fx.revisionId();
      const plan = await agent.waitForLog(is.revision(rev, 'reconcile plan'), 15_000, 0, 'the first reconcile plan');
      expect(plan).toMatchObject({ stop_order: [], start_order: STACK, no_touch: [] });
      const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the end of the first apply');
      expect(end.msg).toBe('all components running');
      const ids = await live();
      const web = ids.web as string;
      const info = await docker.getContainer(web).inspect();
      expect(info.Config.Labels).toMatchObject({
        [LABELS.component]: 'web',
        [LABELS.owner]: tag,
        [LABELS.hash]: h.component('web')!.hash,
      });
      expect(info.HostConfig.NetworkMode).toBe('host');
      expect(info.Config.User).toBe('65534:65534');
      expect(await page()).toBe('keystone test page\n');
      expect(owned()).toEqual([web]);
      expect(h.history()[0]).toMatchObject({ revision: rev, outcome: 'success' });
      await foreignUntouched();
    });

    it("bumping api's version replaces web's container; influxdb and telemetry keep their pids", async () => {
      const before = await live();
      const mark = agent.mark();
      fx.bumpVersion('api', '1.5.0');
      const rev = await fx.revisionId();
      const plan = await agent.waitForLog(
        is.revision(rev, 'reconcile plan'),
        15_000,
        mark,
        'the reconcile of the bump',
      );
      expect(plan).toMatchObject({
        stop_order: ['web', 'api'],
        start_order: ['api', 'web'],
        no_touch: ['influxdb', 'telemetry'],
      });
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the end of the bump');
      expect(end.msg).toBe('all components running');

      const after = await live();
      for (const name of ['influxdb', 'telemetry']) {
        expect(after[name], name).toBe(before[name]);
        expect(
          componentLines(name, mark).filter((l) => l.state !== undefined),
          `no state change of ${name}`,
        ).toEqual([]);
      }
      expect(after.api).not.toBe(before.api);
      expect(after.web).not.toBe(before.web);
      // Stop-first: the old container is gone (stopped and removed), the new one is the agent's only container.
      expect(await inspectOrUndefined(before.web as string)).toBeUndefined();
      expect(owned()).toEqual([after.web]);
      expect(indexOf(is.state('web', 'starting'), mark)).toBeGreaterThan(indexOf(is.state('api', 'running'), mark));
      expect(await page()).toBe('keystone test page\n');
      await foreignUntouched();
    });

    it("restarting influxdb through the API replaces web's container after api is healthy again; telemetry is left alone", async () => {
      const before = await live();
      const mark = agent.mark();
      const token = readFileSync(join(h.stateDir, 'api-token'), 'utf8').trim();
      const res = await fetch(`http://127.0.0.1:${apiPort}/v1/components/influxdb:restart?wait=health&timeout=60s`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await res.json()) as {
        component: string;
        pid: number;
        dependents: Record<string, number | string>;
      };
      expect(res.status, JSON.stringify(body)).toBe(200);

      const after = await live();
      expect(body).toMatchObject({
        component: 'influxdb',
        pid: after.influxdb,
        dependents: { api: after.api, web: after.web },
      });
      for (const name of ['influxdb', 'api', 'web']) expect(after[name], name).not.toBe(before[name]);
      expect(after.telemetry).toBe(before.telemetry);
      expect(componentLines('telemetry', mark).filter((l) => l.state !== undefined)).toEqual([]);
      // The order of the agent's own log: web stopped first, started only after api was running again.
      expect(indexOf(is.state('web', 'stopping'), mark)).toBeLessThan(indexOf(is.state('api', 'stopping'), mark));
      expect(indexOf(is.state('web', 'starting'), mark)).toBeGreaterThan(indexOf(is.state('api', 'running'), mark));
      expect(indexOf(is.state('api', 'starting'), mark)).toBeGreaterThan(
        indexOf(is.state('influxdb', 'running'), mark),
      );
      expect(await inspectOrUndefined(before.web as string)).toBeUndefined();
      expect(owned()).toEqual([after.web]);
      expect(await page()).toBe('keystone test page\n');
      await foreignUntouched();
    });

    it('kill -9 of the agent and a new start: the same container and pids, adopted, nothing restarted', async () => {
      const before = await live();
      expect((await agent.kill9()).signal).toBe('SIGKILL');
      // The container is the engine's, not the agent's child: it runs on.
      expect(await live()).toEqual(before);

      agent = start();
      const rev = await fx.revisionId();
      const plan = await agent.waitForLog(
        is.revision(rev, 'reconcile plan'),
        15_000,
        0,
        'the reconcile after the restart',
      );
      expect(plan).toMatchObject({ stop_order: [], start_order: [], no_touch: STACK });
      const end = await agent.waitForLog(is.applyEnd, 15_000, 0, 'the end of the apply after the restart');
      // A restart resumes the revision it runs (SPEC §5): its outcome stands, everything adopted and healthy.
      expect(end.msg).toBe('resumed the revision applied last: its outcome stands (success); all components running');

      const adoptedWeb = agent.lines(is.about('web', 'adopted running instance'));
      expect(adoptedWeb).toHaveLength(1);
      expect(adoptedWeb[0]!.container).toBe((before.web as string).slice(0, 12));
      for (const name of PROCESSES)
        expect(agent.lines(is.about(name, 'adopted running instance'))[0]?.pid, name).toBe(before[name]);
      expect(agent.lines((l) => l.state === 'starting' || l.state === 'stopping' || l.state === 'installing')).toEqual(
        [],
      );
      expect(agent.lines(is.msg('removed a container this agent owned but no longer runs'))).toEqual([]);
      expect(await live()).toEqual(before);
      expect(owned()).toEqual([before.web]);
      await foreignUntouched();
    });

    it('a crash right after a container was created leaves it unrecorded: the next start removes it, then starts web afresh', async () => {
      const before = await live();
      await agent.kill9();
      fx.bumpVersion('web', '1.28.0');
      // Dies right after the new web container was created and started, before its id reached the store.
      const crashing = start({ KEYSTONE_CRASH_AT: 'after-spawn' });
      agent = crashing;
      expect((await crashing.waitForExit(30_000)).signal).toBe('SIGKILL');
      expect(crashing.lines(is.state('web', 'stopping'))).toHaveLength(1);
      const leftovers = owned();
      expect(leftovers, 'exactly one container of the agent: the unrecorded new web').toHaveLength(1);
      const leftover = leftovers[0]!;
      expect(leftover).not.toBe(before.web);
      expect(await inspectOrUndefined(before.web as string)).toBeUndefined();
      expect(h.component('web')?.instance).not.toEqual({ kind: 'container', id: leftover });

      agent = start(undefined, ['--stop-on-exit']);
      const removed = await agent.waitForLog(
        is.msg('removed a container this agent owned but no longer runs'),
        15_000,
        0,
        'the leftover removed',
      );
      expect(removed).toMatchObject({ component: 'web', container: leftover.slice(0, 12) });
      const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the end of the apply after the crash');
      expect(end.msg).toBe('all components running');
      expect(agent.logs.indexOf(removed)).toBeLessThan(agent.logs.indexOf(agent.lines(is.msg('reconcile plan'))[0]!));
      expect(await inspectOrUndefined(leftover)).toBeUndefined();

      const after = await live();
      for (const name of PROCESSES) expect(after[name], `${name} adopted, not restarted`).toBe(before[name]);
      expect(after.web).not.toBe(leftover);
      expect(owned()).toEqual([after.web]);
      expect(h.component('web')?.version).toBe('1.28.0');
      expect(await page()).toBe('keystone test page\n');
      await foreignUntouched();
    });

    it('a stop with --stop-on-exit stops and removes every container of the agent, and only those', async () => {
      expect(await agent.stop()).toEqual({ code: 0, signal: null });
      for (const c of h.components()) expect(c.state, c.name).toBe('stopped');
      expect(owned()).toEqual([]);
      expect(h.processes().map((p) => `${p.pid} ${p.argv.join(' ')}`)).toEqual([]);
      await foreignUntouched();
    });
  },
);
