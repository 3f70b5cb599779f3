// ContainerRuntime against the real Docker engine (or Podman's: KEYSTONE_TEST_ENGINE=podman, test-engine.ts): labels, adoption, confinement, permissions, images, exits, logs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_DEVICE_POLICY } from '../../src/core/device-policy.js';
import { ContainerRuntime } from '../../src/runtime/container-runtime.js';
import { isContainerError, type ContainerCode } from '../../src/runtime/container-error.js';
import { LABELS } from '../../src/runtime/container-spec.js';
import type { Instance } from '../../src/runtime/runtime.js';
import { BUSYBOX_IMAGE, ensureBusyboxImage } from '../support/busybox-image.js';
import { needs } from '../support/requirements.js';
import { engineCli, engineName, engineRequirement, runtimeSocketPaths, testEngine } from '../support/test-engine.js';
import {
  FOREIGN_LABEL,
  containerComponent,
  docker,
  freeLowPort,
  inspectOrUndefined,
  newRunId,
  ownerTagFor,
  removeTestContainers,
} from './container-fixtures.js';
import { readOr, tempRoot, waitFor } from './runtime-fixtures.js';

const RUN = newRunId();
/** The busybox test image is `docker import`ed from the host's static busybox. */
const engine = needs(engineRequirement(), 'busybox');
const cli = engineCli();
/** Can this engine run a privileged container at all? (Not when dockerd itself lacks capabilities, as in a sandbox.) */
const privilegedWorks =
  !engine.skip &&
  spawnSync(cli.cmd, [...cli.args, 'run', '--rm', '--privileged', '--entrypoint', 'true', 'keystone-test/busybox:1'], {
    stdio: 'ignore',
  }).status === 0;
const never = new AbortController().signal;
let tmp: Awaited<ReturnType<typeof tempRoot>>;
const runtimes: ContainerRuntime[] = [];

/** A runtime of this test run (closed after each test, as an agent that exits). */
function runtime(
  name = 'agent',
  more: Partial<ConstructorParameters<typeof ContainerRuntime>[0]> = {},
): ContainerRuntime {
  const sockets = runtimeSocketPaths();
  const r = new ContainerRuntime({
    ownerTag: ownerTagFor(RUN, name),
    ...(sockets && { socketPaths: sockets }),
    ...more,
  });
  runtimes.push(r);
  return r;
}

const idOf = (i: Instance): string => {
  if (i.ref.kind !== 'container') throw new Error('not a container');
  return i.ref.id;
};

async function expectCode(p: Promise<unknown>, code: ContainerCode): Promise<Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isContainerError(err, code), `expected ${code}, got ${String(err)}`).toBe(true);
  return err as Error;
}

describe.skipIf(engine.skip)(engine.title(`ContainerRuntime (a real ${engineName()} engine)`), () => {
  beforeAll(async () => {
    await ensureBusyboxImage();
  }, 90_000);
  beforeEach(async () => {
    tmp = await tempRoot();
  });
  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((r) => r.close()));
    await removeTestContainers(RUN);
    await tmp.cleanup();
  });
  afterAll(async () => {
    await removeTestContainers(RUN);
  });

  it('creates and starts a container labelled with component, hash and owner, then stops and removes it', async () => {
    const rt = runtime();
    const c = containerComponent('labels', { image: BUSYBOX_IMAGE, pull_policy: 'never', command: ['sleep', '1000'] });
    const paths = tmp.paths('labels');
    await rt.install(c, paths, never);
    const inst = await rt.start(c, paths);
    const info = await docker.getContainer(idOf(inst)).inspect();
    expect(info.State.Running).toBe(true);
    expect(info.Config.Labels).toMatchObject({
      [LABELS.component]: 'labels',
      [LABELS.hash]: c.hash,
      [LABELS.owner]: ownerTagFor(RUN, 'agent'),
      [LABELS.logDir]: paths.logDir,
    });
    expect(info.Name).toMatch(new RegExp(`^/keystone-labels-${c.hash.slice(3, 15)}-[0-9a-f]{6}$`));
    expect(info.HostConfig.RestartPolicy?.Name).toBe('no'); // the agent supervises, not the engine
    expect(await rt.listOwned()).toEqual([
      expect.objectContaining({
        id: idOf(inst),
        component: 'labels',
        hash: c.hash,
        state: 'running',
        engine: testEngine(),
      }),
    ]);
    await rt.stop(inst.ref, 0);
    expect(await inspectOrUndefined(idOf(inst))).toBeUndefined();
    expect(await rt.listOwned()).toEqual([]);
  });

  it('a fresh runtime (an agent restart) adopts its container by id and label; a foreign container is never adopted, stopped or removed', async () => {
    const first = runtime('owner');
    const c = containerComponent('adopt', { image: BUSYBOX_IMAGE, pull_policy: 'never', command: ['sleep', '1000'] });
    const inst = await first.start(c, tmp.paths('adopt'));
    await first.close(); // the agent dies; the container runs on

    const again = runtime('owner');
    const adopted = await again.adopt(inst.ref);
    expect(adopted?.ref).toEqual(inst.ref);
    expect((await docker.getContainer(idOf(inst)).inspect()).State.Running).toBe(true);
    // Another agent's runtime (another owner tag) does not claim it.
    expect(await runtime('other').adopt(inst.ref)).toBeUndefined();

    const foreign = await docker.createContainer({
      Image: BUSYBOX_IMAGE,
      Cmd: ['sleep', '1000'],
      Labels: { [LABELS.component]: 'adopt', [LABELS.hash]: c.hash, [FOREIGN_LABEL]: RUN },
    });
    await foreign.start();
    const foreignRef = { kind: 'container' as const, id: foreign.id };
    expect(await again.adopt(foreignRef)).toBeUndefined();
    await again.stop(foreignRef, 0);
    await expectCode(again.removeOwned(foreign.id), 'KS_CONTAINER_NOT_OWNED');
    expect((await foreign.inspect()).State.Running).toBe(true);
    expect((await again.listOwned()).map((o) => o.id)).toEqual([idOf(inst)]);

    // The adopted instance's exit comes from the engine, with its status code.
    await docker.getContainer(idOf(inst)).kill();
    expect(await adopted!.exited).toEqual({ code: 137, signal: null });
    await again.removeOwned(idOf(inst));
    expect(await inspectOrUndefined(idOf(inst))).toBeUndefined();
  });

  it('confines by default: the recipe user, memory and pids limits, a read-only mount, no-new-privileges, every capability dropped but those granted', async () => {
    // The device allows mounts from the test's own directory (nothing is mountable by default).
    const rt = runtime('agent', { policy: { ...DEFAULT_DEVICE_POLICY, allowMounts: [tmp.root] } });
    const data = join(tmp.root, 'data');
    await mkdir(data);
    await writeFile(join(data, 'hello.txt'), 'hello\n');
    const c = containerComponent('confined', {
      image: BUSYBOX_IMAGE,
      pull_policy: 'never',
      user: '65534:65534',
      command: [
        'sh',
        '-c',
        'id -u; grep -E "^(NoNewPrivs|CapBnd|CapEff)" /proc/self/status; cat /data/hello.txt; touch /data/x || echo read-only; exec sleep 1000',
      ],
      mounts: [{ source: data, target: '/data', read_only: true }],
      resources: { memory_mb: 64, pids_limit: 32 },
      capabilities: ['CAP_NET_BIND_SERVICE'],
    });
    const paths = tmp.paths('confined');
    const inst = await rt.start(c, paths);
    const info = await docker.getContainer(idOf(inst)).inspect();
    expect(info.Config.User).toBe('65534:65534');
    expect(info.HostConfig.Memory).toBe(64 * 1024 * 1024);
    expect(info.HostConfig.PidsLimit).toBe(32);
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    if (testEngine() === 'docker') {
      expect(info.HostConfig.CapDrop).toEqual(['ALL']);
      expect(info.HostConfig.CapAdd).toEqual(['CAP_NET_BIND_SERVICE']);
    } else {
      // Podman reports the difference from its default set: every default capability dropped but the one granted
      // (which is in that set, so not "added"). The program's bounding set below is the same on both engines.
      expect(info.HostConfig.CapDrop).toEqual(
        expect.arrayContaining(['CHOWN', 'DAC_OVERRIDE', 'KILL', 'NET_RAW', 'SETUID', 'SETGID']),
      );
      expect(info.HostConfig.CapDrop).not.toContain('NET_BIND_SERVICE');
    }
    expect(info.Mounts).toEqual([
      expect.objectContaining({ Type: 'bind', Source: data, Destination: '/data', RW: false }),
    ]);
    // And as the program inside sees it: uid, the flag, the one capability bit (10), and the mount.
    const out = await waitFor(
      async () => {
        const text = await readOr(join(paths.logDir, 'stdout.log'));
        return text.includes('read-only') && text;
      },
      'the container to report its confinement',
      10_000,
    );
    expect(out).toMatch(/^65534$/m);
    expect(out).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(out).toMatch(/^CapBnd:\s+0000000000000400$/m);
    // Docker: a non-root user holds none of its bounding set. Podman makes a granted capability ambient for a non-root
    // user, so the program holds it (docs/containers.md, Podman); nothing beyond the grant either way.
    expect(out).toMatch(testEngine() === 'docker' ? /^CapEff:\s+0000000000000000$/m : /^CapEff:\s+0000000000000400$/m);
    expect(out).toContain('hello');
    expect(existsSync(join(data, 'x'))).toBe(false);
  });

  it('without capabilities the bounding set is empty', async () => {
    const rt = runtime();
    const c = containerComponent('nocaps', {
      image: BUSYBOX_IMAGE,
      pull_policy: 'never',
      command: ['sh', '-c', 'grep ^CapBnd /proc/self/status; exec sleep 1000'],
    });
    const paths = tmp.paths('nocaps');
    const inst = await rt.start(c, paths);
    expect((await docker.getContainer(idOf(inst)).inspect()).HostConfig.CapAdd ?? []).toEqual([]);
    await waitFor(
      async () => /^CapBnd:\s+0000000000000000$/m.test(await readOr(join(paths.logDir, 'stdout.log'))),
      'an empty bounding set in the log',
      10_000,
    );
  });

  it('refuses privileged mode and the host network without the device permission, before creating anything; allows them with it', async () => {
    const privileged = containerComponent('priv', {
      image: BUSYBOX_IMAGE,
      pull_policy: 'never',
      privileged: true,
      command: ['sleep', '1000'],
    });
    const hostNet = containerComponent('hostnet', {
      image: BUSYBOX_IMAGE,
      pull_policy: 'never',
      network_mode: 'host',
      command: ['sleep', '1000'],
    });
    const strict = runtime();
    for (const c of [privileged, hostNet]) {
      await expectCode(strict.install(c, tmp.paths(c.name), never), 'KS_CONTAINER_NOT_PERMITTED');
      await expectCode(strict.start(c, tmp.paths(c.name)), 'KS_CONTAINER_NOT_PERMITTED');
    }
    expect(await strict.listOwned()).toEqual([]);

    const lenient = runtime('lenient', {
      policy: { ...DEFAULT_DEVICE_POLICY, allowPrivileged: true, allowHostNamespaces: true },
    });
    if (privilegedWorks) {
      const p = await lenient.start(privileged, tmp.paths('priv'));
      expect((await docker.getContainer(idOf(p)).inspect()).HostConfig.Privileged).toBe(true);
    } else {
      // This engine cannot grant every capability (it runs confined itself): past our permission check, the
      // engine's own refusal is what comes back, and the half-created container is removed.
      const err = await expectCode(lenient.start(privileged, tmp.paths('priv')), 'KS_START_FAILED');
      expect(err.message).toMatch(/caps|capabilit|permitted/i);
      expect(await lenient.listOwned()).toEqual([]);
    }
    const h = await lenient.start(hostNet, tmp.paths('hostnet'));
    expect((await docker.getContainer(idOf(h)).inspect()).HostConfig.NetworkMode).toBe('host');
  });

  it('pull_policy "never" with a missing image is KS_IMAGE_MISSING at install and at start; an unreachable registry is KS_IMAGE_PULL_FAILED', async () => {
    const rt = runtime();
    const missing = containerComponent('missing', { image: `keystone-test/absent:${RUN}`, pull_policy: 'never' });
    const err = await expectCode(rt.install(missing, tmp.paths('missing'), never), 'KS_IMAGE_MISSING');
    expect(err.message).toContain(`keystone-test/absent:${RUN}`);
    await expectCode(rt.start(missing, tmp.paths('missing')), 'KS_IMAGE_MISSING');
    // Port 1 of the loopback refuses at once: a pull that cannot reach its registry fails with the engine's reason.
    const unreachable = containerComponent('unreachable', {
      image: `127.0.0.1:1/absent:${RUN}`,
      pull_policy: 'if-not-present',
    });
    await expectCode(rt.install(unreachable, tmp.paths('unreachable'), never), 'KS_IMAGE_PULL_FAILED');
    expect(await rt.listOwned()).toEqual([]);
  });

  it('a missing mount source is refused before anything is created', async () => {
    const rt = runtime('agent', { policy: { ...DEFAULT_DEVICE_POLICY, allowMounts: [tmp.root] } });
    const gone = join(tmp.root, 'no-such-dir');
    const c = containerComponent('nomount', {
      image: BUSYBOX_IMAGE,
      pull_policy: 'never',
      user: '65534:65534',
      command: ['sleep', '1000'],
      mounts: [{ source: gone, target: '/data' }],
    });
    const err = await expectCode(rt.install(c, tmp.paths('nomount'), never), 'KS_MOUNT_SOURCE_MISSING');
    expect(err.message).toContain(gone);
    await expectCode(rt.start(c, tmp.paths('nomount')), 'KS_MOUNT_SOURCE_MISSING');
    expect(existsSync(gone)).toBe(false); // not created as an empty directory either
    expect(await rt.listOwned()).toEqual([]);
  });

  it('a container that exits at once: `exited` resolves with its code, and its output is in the log files', async () => {
    const rt = runtime();
    const c = containerComponent('exits', {
      image: BUSYBOX_IMAGE,
      pull_policy: 'never',
      command: ['sh', '-c', 'echo to-stdout; echo to-stderr >&2; exit 3'],
    });
    const paths = tmp.paths('exits');
    const inst = await rt.start(c, paths);
    expect(await inst.exited).toEqual({ code: 3, signal: null });
    await waitFor(
      async () => (await readOr(join(paths.logDir, 'stdout.log'))) === 'to-stdout\n',
      'stdout in stdout.log',
    );
    expect(await readOr(join(paths.logDir, 'stderr.log'))).toBe('to-stderr\n');
    await rt.stop(inst.ref, 0); // stopped already: removed
    expect(await inspectOrUndefined(idOf(inst))).toBeUndefined();
  });

  it('copying output resumes after an agent restart from the last line copied: nothing lost, nothing twice', async () => {
    const sig = join(tmp.root, 'sig');
    await mkdir(sig);
    const c = containerComponent('resume', {
      image: BUSYBOX_IMAGE,
      pull_policy: 'never',
      command: ['sh', '-c', 'echo one; until test -e /sig/go; do sleep 1; done; echo two; exec sleep 1000'],
      mounts: [{ source: sig, target: '/sig', read_only: true }],
    });
    const paths = tmp.paths('resume');
    const stdout = join(paths.logDir, 'stdout.log');
    const mountable = { policy: { ...DEFAULT_DEVICE_POLICY, allowMounts: [tmp.root] } };
    const first = runtime('resume', mountable);
    const inst = await first.start(c, paths);
    await waitFor(async () => (await readOr(stdout)) === 'one\n', '"one" copied');
    await first.close();
    await writeFile(join(sig, 'go'), '');
    await waitFor(
      async () =>
        (await docker.getContainer(idOf(inst)).logs({ stdout: true, follow: false })).toString().includes('two'),
      'the container to print "two" while no agent copies',
      10_000,
    );
    expect(await readOr(stdout)).toBe('one\n');
    const adopted = await runtime('resume').adopt(inst.ref);
    expect(adopted).toBeDefined();
    await waitFor(async () => (await readOr(stdout)) === 'one\ntwo\n', '"two" copied once after adoption');
  });

  it('names every socket it tried when no engine answers', async () => {
    const rt = runtime('nowhere', {
      socketPaths: { docker: ['/nonexistent/docker.sock'], podman: ['/nonexistent/podman.sock'] },
    });
    const c = containerComponent('nowhere', { image: BUSYBOX_IMAGE, pull_policy: 'never' });
    const err = await expectCode(rt.start(c, tmp.paths('nowhere')), 'KS_CONTAINER_ENGINE_UNAVAILABLE');
    expect(err.message).toContain('/nonexistent/docker.sock');
    expect(err.message).toContain('/nonexistent/podman.sock');
    const podmanOnly = containerComponent('podman', { image: BUSYBOX_IMAGE, runtime: 'podman', pull_policy: 'never' });
    const err2 = await expectCode(
      rt.install(podmanOnly, tmp.paths('podman'), never),
      'KS_CONTAINER_ENGINE_UNAVAILABLE',
    );
    expect(err2.message).toContain('/nonexistent/podman.sock');
    expect(err2.message).not.toContain('/nonexistent/docker.sock');
  });

  it('health probes run from the host: http against httpd on the host network and on a published port, cmd: in the work directory', async () => {
    const rt = runtime('health', { policy: { ...DEFAULT_DEVICE_POLICY, allowHostNamespaces: true } });
    const hostPort = await freeLowPort();
    const onHost = containerComponent(
      'httpd-host',
      {
        image: BUSYBOX_IMAGE,
        pull_policy: 'never',
        network_mode: 'host',
        user: '65534:65534',
        command: ['httpd', '-f', '-p', String(hostPort), '-h', '/www'],
      },
      { health: { check: `http://127.0.0.1:${hostPort}/`, interval: '100ms', timeout: '1s' } },
    );
    const published = await freeLowPort();
    const bridged = containerComponent(
      'httpd-bridge',
      {
        image: BUSYBOX_IMAGE,
        pull_policy: 'never',
        user: '65534:65534',
        command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
        ports: [{ host_port: published, container_port: 8080 }],
      },
      { health: { check: `tcp://127.0.0.1:${published}`, interval: '100ms', timeout: '1s' } },
    );
    for (const c of [onHost, bridged]) {
      const paths = tmp.paths(c.name);
      const probe = await rt.healthProbe(c, paths);
      expect(probe).toBeDefined();
      expect((await probe!(never)).ok).toBe(false); // nothing listens yet
      await rt.start(c, paths);
      await waitFor(async () => (await probe!(never)).ok, `${c.name} healthy`, 10_000);
    }
    const viaBridge = await fetch(`http://127.0.0.1:${published}/`);
    expect(await viaBridge.text()).toBe('keystone test page\n');

    const withCmd = containerComponent(
      'cmdcheck',
      { image: BUSYBOX_IMAGE, pull_policy: 'never' },
      { health: { check: 'cmd:test -f marker', timeout: '2s' } },
    );
    const paths = tmp.paths('cmdcheck');
    await rt.install(withCmd, paths, never);
    const probe = (await rt.healthProbe(withCmd, paths))!;
    expect((await probe(never)).ok).toBe(false);
    await writeFile(join(paths.workDir, 'marker'), '');
    expect((await probe(never)).ok).toBe(true);

    // A container recipe's cmd: check is host code: never the agent's root (issue 13), but the device's unprivileged
    // default user, with no capabilities.
    if (process.getuid?.() === 0) {
      const whoami = containerComponent(
        'whoami',
        { image: BUSYBOX_IMAGE, pull_policy: 'never' },
        { health: { check: 'cmd:id -u > uid.txt; grep CapEff /proc/self/status > caps.txt', timeout: '2s' } },
      );
      const wp = tmp.paths('whoami');
      await rt.install(whoami, wp, never);
      for (const f of ['uid.txt', 'caps.txt']) {
        await writeFile(join(wp.workDir, f), '');
        await chmod(join(wp.workDir, f), 0o666);
      }
      expect((await (await rt.healthProbe(whoami, wp))!(never)).ok).toBe(true);
      expect((await readOr(join(wp.workDir, 'uid.txt'))).trim()).toBe('65534');
      expect(await readOr(join(wp.workDir, 'caps.txt'))).toMatch(/^CapEff:\s+0+$/m);
    }
  });
});
