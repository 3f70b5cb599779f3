// Container confinement through the real agent: what a recipe asks for is what the engine reports (and what the
// program inside sees); what the device does not allow (privileged, the host's network) and a mount whose source is
// missing refuse the whole revision before anything is created, and the running neighbours are left alone.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABELS } from '../../src/runtime/container-spec.js';
import { ContainerHarness } from '../support/container-harness.js';
import { is, type AgentProcess } from '../support/agent-harness.js';
import { BUSYBOX_IMAGE, containersLabelled, ensureBusyboxImage } from '../support/busybox-image.js';
import { needs } from '../support/requirements.js';
import { engineRequirement, engineName, engineSocket, testEngine } from '../support/test-engine.js';
import { asContainer, sleeper, stackFixture, type ComponentSpec, type StackFixture } from '../support/stack-fixture.js';
import { docker } from '../runtime/container-fixtures.js';

/** The busybox test image is `docker import`ed (`podman import`ed) from the host's static busybox; the engine: KEYSTONE_TEST_ENGINE. */
const engine = needs(engineRequirement(), 'busybox');

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
  engine.title(`container confinement through the agent (a real ${engineName()} engine)`),
  { timeout: 60_000 },
  () => {
    let fx: StackFixture;
    let h: ContainerHarness;
    let agent: AgentProcess;
    let tag: string;
    let data: string;
    let safe: string;
    /** Where the / mount case would write on the host, were it not refused. */
    let pwned: string;
    /** A container name for the container:… case (refused before the engine is asked, so it need not exist). */
    let hostNetContainer: string;

    beforeAll(async () => {
      await ensureBusyboxImage();
      data = mkdtempSync(join(tmpdir(), 'keystone-mount-'));
      writeFileSync(join(data, 'hello.txt'), 'hello from the host\n', { mode: 0o644 });
      // Writable by anyone on the host: inside the container, only the read-only mount can stop a write.
      chmodSync(data, 0o777);
      // Root's and closed to others: a mount source under it cannot be swapped for a link by someone else.
      safe = mkdtempSync(join(tmpdir(), 'keystone-mount-safe-'));
      mkdirSync(join(data, 'sub'));
      chmodSync(safe, 0o755);
      pwned = join(tmpdir(), `keystone-pwned-${process.pid}`);
      hostNetContainer = `keystone-test-hostnet-${process.pid}`;
      const confined = asContainer('confined', '1.0.0', {
        image: BUSYBOX_IMAGE,
        user: '65534:65534',
        command: [
          'sh',
          '-c',
          'id -u; grep -E "^(NoNewPrivs|CapBnd|CapEff)" /proc/self/status; cat /data/hello.txt; touch /data/x || echo read-only; exec sleep 1000',
        ],
        mounts: [{ source: data, target: '/data', read_only: true }],
        resources: { memory_mb: 48, pids_limit: 16 },
      });
      fx = await stackFixture({ signed: false, components: () => [sleeper('neighbour'), confined] });
      h = new ContainerHarness();
      tag = h.tag;
    }, 90_000);
    afterAll(async () => {
      await h?.cleanup();
      fx?.cleanup();
      if (data) rmSync(data, { recursive: true, force: true });
      if (safe) rmSync(safe, { recursive: true, force: true });
    });

    const containerOf = (name: string) => {
      const i = h.component(name)?.instance;
      if (i?.kind !== 'container') throw new Error(`${name} has no container instance: ${JSON.stringify(i)}`);
      return i.id;
    };

    it('the recipe user, memory and pids limits, a read-only mount, no capabilities and no-new-privileges, as the engine and the program report them', async () => {
      // No --allow-privileged, no --allow-host-namespaces: only the test's own directory is mountable.
      agent = h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--allow-mount', data, '--allow-mount', safe],
      });
      const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the end of the first apply');
      expect(end.msg).toBe('all components running');
      const id = containerOf('confined');
      const info = await docker.getContainer(id).inspect();
      expect(info.Config.User).toBe('65534:65534');
      expect(info.HostConfig.Memory).toBe(48 * 1024 * 1024);
      expect(info.HostConfig.PidsLimit).toBe(16);
      expect(info.HostConfig.Privileged).toBe(false);
      expect(info.HostConfig.NetworkMode).toBe('bridge');
      // Docker reports the request (ALL); Podman what it dropped: every capability of its default set (docs/containers.md,
      // Podman). Either way none is left: the program's own CapBnd and CapEff below are zero.
      if (testEngine() === 'docker') expect(info.HostConfig.CapDrop).toEqual(['ALL']);
      else
        expect(info.HostConfig.CapDrop).toEqual(
          expect.arrayContaining([
            'CHOWN',
            'DAC_OVERRIDE',
            'FOWNER',
            'KILL',
            'NET_BIND_SERVICE',
            'NET_RAW',
            'SETGID',
            'SETUID',
            'SYS_CHROOT',
          ]),
        );
      expect(info.HostConfig.CapAdd ?? []).toEqual([]);
      expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
      expect(info.Mounts).toEqual([
        expect.objectContaining({ Type: 'bind', Source: data, Destination: '/data', RW: false }),
      ]);

      // The program's own view, through the agent's copy of its output.
      const stdout = join(h.stateDir, 'components', 'confined', 'logs', 'stdout.log');
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
      const stderr = join(h.stateDir, 'components', 'confined', 'logs', 'stderr.log');
      await until(
        () => existsSync(stderr) && /read-only file system/i.test(readFileSync(stderr, 'utf8')),
        'touch refused by the read-only mount, in stderr.log',
      );
    });

    const refusals: Array<{ what: string; spec: () => ComponentSpec; path: string; code: string }> = [
      {
        what: 'privileged = true without --allow-privileged',
        spec: () =>
          asContainer('priv', '1.0.0', { image: BUSYBOX_IMAGE, command: ['sleep', '1000'], privileged: true }),
        path: 'lifecycle.run.container.privileged',
        code: 'KS_CONTAINER_NOT_PERMITTED',
      },
      {
        what: 'network_mode = "host" without --allow-host-namespaces',
        spec: () =>
          asContainer('hostnet', '1.0.0', { image: BUSYBOX_IMAGE, command: ['sleep', '1000'], network_mode: 'host' }),
        path: 'lifecycle.run.container.network_mode',
        code: 'KS_CONTAINER_NOT_PERMITTED',
      },
      // Issue 13, finding 1: each of these alone was host root (a busybox container wrote a root-owned file on the
      // host through a / mount) with no --allow-* flag at all.
      {
        what: "a writable bind mount of the host's / (a root-owned file written on the host)",
        spec: () =>
          asContainer('rootfs', '1.0.0', {
            image: BUSYBOX_IMAGE,
            command: ['sh', '-c', `touch /host${pwned}; exec sleep 1000`],
            mounts: [{ source: '/', target: '/host' }],
          }),
        path: 'lifecycle.run.container.mounts[0].source',
        code: 'KS_MOUNT_NOT_PERMITTED',
      },
      {
        what: 'the engine socket, even read-only',
        spec: () =>
          asContainer('sock', '1.0.0', {
            image: BUSYBOX_IMAGE,
            user: '65534:65534',
            command: ['sleep', '1000'],
            mounts: [{ source: engineSocket(), target: '/var/run/docker.sock', read_only: true }],
          }),
        path: 'lifecycle.run.container.mounts[0].source',
        code: 'KS_MOUNT_NOT_PERMITTED',
      },
      {
        what: 'CAP_SYS_ADMIN',
        spec: () =>
          asContainer('sysadmin', '1.0.0', {
            image: BUSYBOX_IMAGE,
            command: ['sleep', '1000'],
            capabilities: ['CAP_SYS_ADMIN'],
          }),
        path: 'lifecycle.run.container.capabilities[0]',
        code: 'KS_CAPABILITY_NOT_PERMITTED',
      },
      {
        what: 'root with a writable mount of an allowed directory',
        spec: () =>
          asContainer('rootrw', '1.0.0', {
            image: BUSYBOX_IMAGE,
            command: ['sh', '-c', 'touch /data/by-root; exec sleep 1000'],
            mounts: [{ source: data, target: '/data' }],
          }),
        path: 'lifecycle.run.container.mounts[0].read_only',
        code: 'KS_ROOT_NOT_PERMITTED',
      },
      // Finding 2: the host's network reached through another container's (it reached the agent's loopback API).
      {
        what: 'network_mode = "container:…" (another container\'s namespace)',
        spec: () =>
          asContainer('joiner', '1.0.0', {
            image: BUSYBOX_IMAGE,
            command: ['sleep', '1000'],
            network_mode: `container:${hostNetContainer}`,
          }),
        path: 'lifecycle.run.container.network_mode',
        code: 'KS_CONTAINER_NOT_PERMITTED',
      },
      {
        what: 'pid_mode = "host"',
        spec: () =>
          asContainer('hostpid', '1.0.0', { image: BUSYBOX_IMAGE, command: ['sleep', '1000'], pid_mode: 'host' }),
        path: 'lifecycle.run.container.pid_mode',
        code: 'KS_CONTAINER_NOT_PERMITTED',
      },
      // The second review: the engine resolves a source again at start, so a directory on the way that another user can
      // change could be swapped for a link to /var/run between the check and the start.
      {
        what: 'a mount source under a directory every user can write',
        spec: () =>
          asContainer('racy', '1.0.0', {
            image: BUSYBOX_IMAGE,
            user: '65534:65534',
            command: ['sleep', '1000'],
            mounts: [{ source: join(data, 'sub'), target: '/sub', read_only: true }],
          }),
        path: 'lifecycle.run.container.mounts[0].source',
        code: 'KS_MOUNT_NOT_PERMITTED',
      },
      {
        what: 'a mount whose source does not exist',
        spec: () =>
          asContainer('nomount', '1.0.0', {
            image: BUSYBOX_IMAGE,
            user: '65534:65534',
            command: ['sleep', '1000'],
            mounts: [{ source: join(safe, 'no-such-dir'), target: '/data' }],
          }),
        path: 'lifecycle.run.container.mounts[0].source',
        code: 'KS_MOUNT_SOURCE_MISSING',
      },
    ];

    for (const r of refusals) {
      it(`${r.what}: the revision is rejected, naming the recipe and the field; nothing created, neighbours untouched`, async () => {
        const before = {
          confined: containerOf('confined'),
          neighbour: h.pidsOf().neighbour,
          owned: containersLabelled(LABELS.owner, tag),
        };
        const spec = r.spec();
        const mark = agent.mark();
        // One write: the refused component replaces the previous case's (so each case is a new revision).
        fx.components = fx.components.filter((c) => c.name === 'neighbour' || c.name === 'confined');
        fx.components.push(spec);
        fx.write();
        const rev = await fx.revisionId();
        const refusal = await agent.waitForLog(
          is.revision(rev, 'revision refused; still running the previous one'),
          15_000,
          mark,
          `the refusal of ${rev}`,
        );
        const file = fx.recipePath(spec.name);
        expect(refusal.reason).toContain(`${file}: ${r.path}`);
        expect(refusal.reason).toContain(`[${r.code}]`);
        expect(h.history()[0]).toMatchObject({ revision: rev, outcome: 'rejected' });
        expect(h.history()[0]!.summary).toContain(`${file}: ${r.path}`);
        expect(agent.lines(is.msg('reconcile plan'), mark)).toEqual([]);

        // Nothing created: no container, no work directory, no state lines; the neighbours as they were.
        expect(containersLabelled(LABELS.component, spec.name)).toEqual([]);
        expect(containersLabelled(LABELS.owner, tag)).toEqual(before.owned);
        expect(existsSync(join(h.stateDir, 'components', spec.name))).toBe(false);
        expect(h.component(spec.name)).toBeUndefined();
        expect(agent.lines((l) => l.state !== undefined, mark)).toEqual([]);
        expect(containerOf('confined')).toBe(before.confined);
        expect((await docker.getContainer(before.confined).inspect()).State.Running).toBe(true);
        expect(h.pidsOf().neighbour).toBe(before.neighbour);
        expect(h.components().map((c) => [c.name, c.state])).toEqual([
          ['neighbour', 'running'],
          ['confined', 'running'],
        ]);
      });
    }

    it('the mount source made missing is not created as an empty directory; nothing was written on the host', () => {
      expect(existsSync(join(safe, 'no-such-dir'))).toBe(false);
      expect(existsSync(pwned)).toBe(false);
      expect(existsSync(join(data, 'by-root'))).toBe(false);
    });
  },
);
