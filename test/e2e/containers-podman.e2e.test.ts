// Podman as the engine (SPEC §18), through the real agent and rootful Podman's Docker-compatible API socket, whatever
// KEYSTONE_TEST_ENGINE says: `runtime = "auto"` with Docker's socket named but not answering takes Podman (and says
// so), the containers carry the agent's labels on Podman (and Docker's engine knows nothing of them), an agent killed
// with -9 adopts the same containers, a start-first roll starts the new container before the old one goes,
// confinement is what Podman and the program inside report, the device policy refuses before Podman is asked, and a
// stop with --stop-on-exit removes the agent's containers from Podman. The whole suite, on either engine:
// KEYSTONE_TEST_ENGINE=podman (test/support/test-engine.ts, docs/testing.md).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABELS } from '../../src/runtime/container-spec.js';
import { is, type AgentProcess } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, containersLabelled, ensureBusyboxImage } from '../support/busybox-image.js';
import { ContainerHarness } from '../support/container-harness.js';
import { freePorts } from '../support/free-ports.js';
import { needs } from '../support/requirements.js';
import { missingReason } from '../support/requirement-checks.js';
import { asContainer, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';
import { podmanSocket } from '../support/test-engine.js';

const engine = needs('podman', 'busybox');

/** Polls `fn` until it returns a truthy value; throws at the deadline. */
async function until<T>(fn: () => T | undefined | false, what: string, deadlineMs = 10_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(engine.skip)(
  engine.title(
    'Podman as the engine: labels, adoption, start-first, confinement and the device policy (a real Podman engine)',
  ),
  { timeout: 60_000 },
  () => {
    const podman = new Docker({ socketPath: podmanSocket() });
    /** Docker's engine, when this machine has one: it must know nothing of the agent's containers. */
    const docker =
      missingReason('docker') === undefined ? new Docker({ socketPath: '/var/run/docker.sock' }) : undefined;
    let fx: StackFixture;
    let h: ContainerHarness;
    let agent: AgentProcess;
    let tag: string;
    let webPort: number;
    let data: string;
    let tmp: string;
    /** A socket named as Docker's that accepts and hangs up: an engine that does not answer. */
    let deadDocker: string;
    let deadServer: Server;

    const inspect = async (id: string) => {
      try {
        return await podman.getContainer(id).inspect();
      } catch (e) {
        if ((e as { statusCode?: number }).statusCode === 404) return undefined;
        throw e;
      }
    };
    const containerOf = (name: string) => {
      const i = h.component(name)?.instance;
      if (i?.kind !== 'container') throw new Error(`${name} has no container instance: ${JSON.stringify(i)}`);
      return i.id;
    };
    const start = (more: string[] = []) =>
      h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--docker-socket', deadDocker, '--allow-mount', data, ...more],
      });

    beforeAll(async () => {
      await ensureBusyboxImage(60_000, 'podman');
      tmp = mkdtempSync(join(tmpdir(), 'keystone-podman-'));
      deadDocker = join(tmp, 'docker.sock');
      deadServer = createServer((s) => s.destroy());
      await new Promise<void>((resolve) => deadServer.listen(deadDocker, resolve));
      data = mkdtempSync(join(tmpdir(), 'keystone-podman-data-'));
      writeFileSync(join(data, 'hello.txt'), 'hello from the host\n', { mode: 0o644 });
      chmodSync(data, 0o777);
      [webPort] = (await freePorts(1)) as [number];
      const web = asContainer(
        'web',
        '1.0.0',
        {
          image: BUSYBOX_IMAGE,
          runtime: 'auto',
          user: '65534:65534',
          // Port publishing on Podman's bridge network, from port 80 bound by nobody with no capability (as on Docker:
          // the agent asks Podman for Docker's ip_unprivileged_port_start=0); its own view of its confinement in stdout.log.
          command: [
            'sh',
            '-c',
            'id -u; grep -E "^(NoNewPrivs|CapBnd|CapEff)" /proc/self/status; cat /data/hello.txt; touch /data/x || echo read-only; exec httpd -f -p 80 -h /www',
          ],
          ports: [{ host_port: webPort, container_port: 80 }],
          mounts: [{ source: data, target: '/data', read_only: true }],
          resources: { memory_mb: 48, pids_limit: 16 },
        },
        { health: { check: `http://127.0.0.1:${webPort}/`, interval: '200ms', timeout: '1s', failureThreshold: 25 } },
      );
      const worker = asContainer(
        'worker',
        '1.0.0',
        { image: BUSYBOX_IMAGE, runtime: 'podman', command: ['sleep', '1000'] },
        { updateStrategy: 'start-first', health: { check: 'cmd:true', interval: '200ms', failureThreshold: 10 } },
      );
      fx = await stackFixture({ signed: false, components: () => [sleeper('neighbour'), web, worker] });
      h = new ContainerHarness('podman');
      tag = h.tag;
    }, 90_000);
    afterAll(async () => {
      await h?.cleanup();
      fx?.cleanup();
      await new Promise((resolve) => (deadServer ? deadServer.close(resolve) : resolve(undefined)));
      for (const d of [tmp, data]) if (d) rmSync(d, { recursive: true, force: true });
    });

    it('runtime = "auto" with Docker\'s socket not answering runs on Podman: labelled, serving port 80 as nobody on its published port', async () => {
      agent = start();
      const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the end of the first apply');
      expect(end.msg).toBe('all components running');
      const engines = agent.lines(is.msg('container engine')).map((l) => [l.runtime, l.engine, l.socket]);
      expect(engines).toEqual(
        expect.arrayContaining([
          ['auto', 'podman', podmanSocket()],
          ['podman', 'podman', podmanSocket()],
        ]),
      );
      for (const name of ['web', 'worker']) {
        const info = (await inspect(containerOf(name)))!;
        expect(info.State.Running, name).toBe(true);
        expect(info.Config.Labels).toMatchObject({
          [LABELS.component]: name,
          [LABELS.owner]: tag,
          [LABELS.hash]: h.component(name)!.hash,
        });
        if (docker)
          await expect(docker.getContainer(containerOf(name)).inspect()).rejects.toMatchObject({ statusCode: 404 });
      }
      expect(containersLabelled(LABELS.owner, tag, 'podman').sort()).toEqual(
        [containerOf('web'), containerOf('worker')].sort(),
      );
      expect(await (await fetch(`http://127.0.0.1:${webPort}/`)).text()).toBe('keystone test page\n');
    });

    it('confinement: the recipe user, memory and pids limits, a read-only mount, no capabilities, no-new-privileges', async () => {
      const info = (await inspect(containerOf('web')))!;
      expect(info.Config.User).toBe('65534:65534');
      expect(info.HostConfig.Memory).toBe(48 * 1024 * 1024);
      expect(info.HostConfig.PidsLimit).toBe(16);
      expect(info.HostConfig.Privileged).toBe(false);
      expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
      // Podman reports the capabilities it dropped (its whole default set), not the request's ALL.
      expect(info.HostConfig.CapDrop).toEqual(
        expect.arrayContaining(['CHOWN', 'DAC_OVERRIDE', 'NET_BIND_SERVICE', 'NET_RAW', 'SETUID', 'SETGID']),
      );
      expect(info.Mounts).toEqual([
        expect.objectContaining({ Type: 'bind', Source: data, Destination: '/data', RW: false }),
      ]);
      const stdout = join(h.stateDir, 'components', 'web', 'logs', 'stdout.log');
      const out = await until(() => {
        const text = existsSync(stdout) ? readFileSync(stdout, 'utf8') : '';
        return text.includes('read-only') && text;
      }, 'the container to report its confinement in stdout.log');
      expect(out).toMatch(/^65534$/m);
      expect(out).toMatch(/^NoNewPrivs:\s+1$/m);
      expect(out).toMatch(/^CapBnd:\s+0000000000000000$/m);
      expect(out).toMatch(/^CapEff:\s+0000000000000000$/m);
      expect(out).toContain('hello from the host');
      expect(existsSync(join(data, 'x'))).toBe(false);
    });

    it('kill -9 of the agent and a new start: the same Podman containers adopted, nothing restarted', async () => {
      const before = { web: containerOf('web'), worker: containerOf('worker'), neighbour: h.pidsOf().neighbour };
      expect((await agent.kill9()).signal).toBe('SIGKILL');
      agent = start();
      const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the end of the apply after the restart');
      expect(end.msg).toBe('resumed the revision applied last: its outcome stands (success); all components running');
      for (const name of ['web', 'worker'] as const) {
        const adopted = agent.lines(is.about(name, 'adopted running instance'));
        expect(adopted, name).toHaveLength(1);
        expect(adopted[0]!.container).toBe(before[name].slice(0, 12));
        expect(containerOf(name)).toBe(before[name]);
      }
      expect(h.pidsOf().neighbour).toBe(before.neighbour);
      expect(agent.lines((l) => l.state === 'starting' || l.state === 'stopping' || l.state === 'installing')).toEqual(
        [],
      );
      expect(agent.lines(is.msg('removed a container this agent owned but no longer runs'))).toEqual([]);
      expect(containersLabelled(LABELS.owner, tag, 'podman').sort()).toEqual([before.web, before.worker].sort());
    });

    it('a start-first roll: the new container starts beside the old one, which goes only once the new one is healthy', async () => {
      const old = containerOf('worker');
      const mark = agent.mark();
      fx.bumpVersion('worker', '1.1.0');
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the roll');
      expect(end.msg).toBe('all components running');
      const lines = agent.lines((l) => l.component === 'worker', mark).map((l) => l.msg ?? `state=${l.state}`);
      expect(lines.indexOf('rolling: new instance started')).toBeGreaterThanOrEqual(0);
      expect(lines.indexOf('rolling: new instance healthy; stopping the old one')).toBeGreaterThan(
        lines.indexOf('rolling: new instance started'),
      );
      expect(lines.filter((m) => m === 'state=stopping' || m === 'state=stopped')).toEqual([]);
      const now = containerOf('worker');
      expect(now).not.toBe(old);
      expect((await inspect(now))?.State.Running).toBe(true);
      expect(await inspect(old)).toBeUndefined();
    });

    const refusals = [
      {
        what: 'privileged = true without --allow-privileged',
        spec: () =>
          asContainer('priv', '1.0.0', {
            image: BUSYBOX_IMAGE,
            runtime: 'podman',
            command: ['sleep', '1000'],
            privileged: true,
          }),
        path: 'lifecycle.run.container.privileged',
        code: 'KS_CONTAINER_NOT_PERMITTED',
      },
      {
        what: "Podman's own socket, even read-only",
        spec: () =>
          asContainer('sock', '1.0.0', {
            image: BUSYBOX_IMAGE,
            runtime: 'podman',
            user: '65534:65534',
            command: ['sleep', '1000'],
            mounts: [{ source: podmanSocket(), target: '/run/podman.sock', read_only: true }],
          }),
        path: 'lifecycle.run.container.mounts[0].source',
        code: 'KS_MOUNT_NOT_PERMITTED',
      },
    ];
    for (const r of refusals) {
      it(`the device policy: ${r.what} is refused before Podman is asked; the running containers untouched`, async () => {
        const before = containersLabelled(LABELS.owner, tag, 'podman').sort();
        const spec = r.spec();
        const mark = agent.mark();
        fx.components = fx.components.filter((c) => ['neighbour', 'web', 'worker'].includes(c.name));
        fx.components.push(spec);
        fx.write();
        const rev = await fx.revisionId();
        const refusal = await agent.waitForLog(
          is.revision(rev, 'revision refused; still running the previous one'),
          15_000,
          mark,
          `the refusal of ${rev}`,
        );
        expect(refusal.reason).toContain(`${fx.recipePath(spec.name)}: ${r.path}`);
        expect(refusal.reason).toContain(`[${r.code}]`);
        expect(containersLabelled(LABELS.component, spec.name, 'podman')).toEqual([]);
        expect(containersLabelled(LABELS.owner, tag, 'podman').sort()).toEqual(before);
        expect(agent.lines((l) => l.state !== undefined, mark)).toEqual([]);
      });
    }

    it('a stop with --stop-on-exit removes every container of the agent from Podman', async () => {
      await agent.kill9();
      // The refused component out again: the revision the agent last applied.
      fx.components = fx.components.filter((c) => ['neighbour', 'web', 'worker'].includes(c.name));
      fx.write();
      agent = start(['--stop-on-exit']);
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the apply after the restart')).msg).toMatch(
        /all components running$/,
      );
      expect(await agent.stop()).toEqual({ code: 0, signal: null });
      expect(containersLabelled(LABELS.owner, tag, 'podman')).toEqual([]);
    });
  },
);
