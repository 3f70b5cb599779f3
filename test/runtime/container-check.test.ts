// The pure parts of the container runtime: permission and mount checks, the recipe's new fields, engine endpoints,
// the create request, and the engine's log framing.
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { parseRecipe, type Recipe } from '../../src/core/recipe.js';
import { componentHash } from '../../src/core/identity.js';
import { DEFAULT_DEVICE_POLICY } from '../../src/core/device-policy.js';
import { checkContainerComponent } from '../../src/runtime/container-check.js';
import { engineEndpoints } from '../../src/runtime/container-engine.js';
import { isContainerError } from '../../src/runtime/container-error.js';
import { ensureImage, type PullProgress } from '../../src/runtime/container-image.js';
import { FrameParser, nsToSince, timestampNs } from '../../src/runtime/container-log-pump.js';
import { containerName, createOptions } from '../../src/runtime/container-spec.js';
import { containerComponent } from './container-fixtures.js';

const FILE = 'recipes/web.toml';
const recipe = (...lines: string[]) =>
  parseRecipe(
    FILE,
    [
      '[metadata]',
      'name = "com.acme.web"',
      'version = "1.0.0"',
      '[lifecycle.run]',
      'type = "container"',
      ...lines,
    ].join('\n'),
  );

describe('checkContainerComponent', () => {
  const c = containerComponent('web', {
    image: 'img:1',
    privileged: true,
    network_mode: 'host',
    user: '65534:65534',
    mounts: [
      { source: '/srv/present', target: '/a' },
      { source: '/srv/absent', target: '/b' },
      { source: 'relative', target: 'also-relative' },
    ],
  });
  const exists = (p: string) => p === '/srv/present';

  it('reports every refusal with its code and TOML path: the device policy first, then the mounts', () => {
    expect(checkContainerComponent(c, { exists }).map((i) => [i.code, i.path])).toEqual([
      ['KS_CONTAINER_NOT_PERMITTED', 'lifecycle.run.container.network_mode'],
      ['KS_CONTAINER_NOT_PERMITTED', 'lifecycle.run.container.privileged'],
      ['KS_MOUNT_NOT_PERMITTED', 'lifecycle.run.container.mounts[0].source'],
      ['KS_MOUNT_NOT_PERMITTED', 'lifecycle.run.container.mounts[1].source'],
      ['KS_MOUNT_SOURCE_MISSING', 'lifecycle.run.container.mounts[1].source'],
      ['KS_MOUNT_SOURCE_INVALID', 'lifecycle.run.container.mounts[2].source'],
      ['KS_MOUNT_SOURCE_INVALID', 'lifecycle.run.container.mounts[2].target'],
    ]);
    // Each refusal says what would allow it.
    expect(checkContainerComponent(c, { exists })[0]!.hint).toContain('--allow-host-namespaces');
  });

  it('the device policy lifts the privileged, host-namespace and mount-prefix refusals, not a missing or relative mount', () => {
    const policy = {
      ...DEFAULT_DEVICE_POLICY,
      allowPrivileged: true,
      allowHostNamespaces: true,
      allowMounts: ['/srv'],
    };
    const codes = checkContainerComponent(c, { exists, policy }).map((i) => i.code);
    expect(codes).toEqual(['KS_MOUNT_SOURCE_MISSING', 'KS_MOUNT_SOURCE_INVALID', 'KS_MOUNT_SOURCE_INVALID']);
  });

  it('a plain bridge container with an allowed, existing read-only mount passes', () => {
    const ok = containerComponent('ok', {
      image: 'img:1',
      mounts: [{ source: '/srv/present', target: '/a', read_only: true }],
    });
    expect(
      checkContainerComponent(ok, { exists, policy: { ...DEFAULT_DEVICE_POLICY, allowMounts: ['/srv/present'] } }),
    ).toEqual([]);
  });

  it('the namespace modes and devices reach the create request; "private" is the engine default', () => {
    const c2 = containerComponent('ns', {
      image: 'img:1',
      pid_mode: 'host',
      ipc_mode: 'shareable',
      uts_mode: 'private',
      devices: ['/dev/ttyUSB0'],
    });
    const hc = createOptions(c2, { name: 'n', ownerTag: 't', logDir: '/l' }).HostConfig!;
    expect(hc.PidMode).toBe('host');
    expect(hc.IpcMode).toBe('shareable');
    expect(hc).not.toHaveProperty('UTSMode');
    expect(hc.Devices).toEqual([
      { PathOnHost: '/dev/ttyUSB0', PathInContainer: '/dev/ttyUSB0', CgroupPermissions: 'rwm' },
    ]);
  });
});

describe('recipe fields for containers', () => {
  it('container capabilities are validated like process capabilities', () => {
    const r = recipe(
      '[lifecycle.run.container]',
      'image = "img:1"',
      'capabilities = ["CAP_NET_BIND_SERVICE", "CAP_NOPE"]',
    );
    expect(r.diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['KS_BAD_CAPABILITY', 'lifecycle.run.container.capabilities[1]'],
    ]);
    const ok = recipe('[lifecycle.run.container]', 'image = "img:1"', 'capabilities = ["CAP_NET_BIND_SERVICE"]');
    expect(ok.recipe?.lifecycle?.run?.container?.capabilities).toEqual(['CAP_NET_BIND_SERVICE']);
  });

  it('update_strategy is stop-first or start-first; replicas an integer from 0', () => {
    const ok = recipe(
      'update_strategy = "start-first"',
      'replicas = 0',
      '[lifecycle.run.container]',
      'image = "img:1"',
    );
    expect(ok.diagnostics).toEqual([]);
    expect(ok.recipe?.lifecycle?.run).toMatchObject({ update_strategy: 'start-first', replicas: 0 });
    const bad = recipe('update_strategy = "rolling"', 'replicas = -1', '[lifecycle.run.container]', 'image = "img:1"');
    expect(bad.diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['KS_INVALID_VALUE', 'lifecycle.run.update_strategy'],
      ['KS_INVALID_VALUE', 'lifecycle.run.replicas'],
    ]);
    expect(
      recipe('replicas = 1.5', '[lifecycle.run.container]', 'image = "img:1"').diagnostics.map((d) => d.path),
    ).toEqual(['lifecycle.run.replicas']);
  });

  it('more than one replica with host ports is refused, naming replicas', () => {
    const r = recipe(
      'replicas = 2',
      '[lifecycle.run.container]',
      'image = "img:1"',
      '[[lifecycle.run.container.ports]]',
      'host_port = 8080',
      'container_port = 80',
    );
    expect(r.diagnostics.map((d) => [d.code, d.path, d.line])).toEqual([
      ['KS_INVALID_VALUE', 'lifecycle.run.replicas', 6],
    ]);
    expect(recipe('replicas = 3', '[lifecycle.run.container]', 'image = "img:1"').diagnostics).toEqual([]);
  });

  it('the new fields, when absent, leave the parsed recipe and so the component hash as before', () => {
    const r = recipe('[lifecycle.run.container]', 'image = "img:1"').recipe!;
    expect(r.lifecycle!.run!).not.toHaveProperty('update_strategy');
    expect(r.lifecycle!.run!).not.toHaveProperty('replicas');
    expect(r.lifecycle!.run!.container).not.toHaveProperty('capabilities');
    // Pinned: the hash of this recipe as computed before the fields existed.
    expect(componentHash({ recipe: r as Recipe, entry: { name: 'web', recipe: 'recipes/web.toml' } })).toBe(
      PINNED_HASH,
    );
  });
});

// Computed with the schema before capabilities, update_strategy and replicas existed (commit 6e1bfcb).
const PINNED_HASH = 'v1:2f316157eee01536f919261e020fe9d524dd5f3615089d4425adfcfbc95b64c6';

describe('engine endpoints', () => {
  it("auto: DOCKER_HOST, the Docker socket, then Podman's user and system sockets", () => {
    const { endpoints } = engineEndpoints('auto', {
      DOCKER_HOST: 'unix:///custom/docker.sock',
      XDG_RUNTIME_DIR: '/run/user/1000',
    });
    expect(endpoints.map((e) => [e.kind, e.label])).toEqual([
      ['docker', '/custom/docker.sock'],
      ['docker', '/var/run/docker.sock'],
      ['podman', '/run/user/1000/podman/podman.sock'],
      ['podman', '/run/podman/podman.sock'],
    ]);
  });

  it('docker and podman pick their own; DOCKER_HOST is unix:// only, tcp:// and other schemes are reported unusable', () => {
    expect(engineEndpoints('podman', { XDG_RUNTIME_DIR: '/x' }).endpoints.map((e) => e.label)).toEqual([
      '/x/podman/podman.sock',
      '/run/podman/podman.sock',
    ]);
    for (const value of ['tcp://10.0.0.2:2375', 'ssh://me@box', 'unix://relative.sock']) {
      const { endpoints, unusable } = engineEndpoints('docker', { DOCKER_HOST: value });
      expect(unusable).toEqual([`DOCKER_HOST=${value} (only unix:// is spoken)`]);
      expect(endpoints.map((e) => e.label)).toEqual(['/var/run/docker.sock']);
    }
  });

  it("sockets given (--docker-socket, --podman-socket) replace that engine's places, DOCKER_HOST included; the other keeps its own", () => {
    const env = { DOCKER_HOST: 'unix:///custom/docker.sock', XDG_RUNTIME_DIR: '/run/user/1000' };
    expect(
      engineEndpoints('auto', env, { podman: ['/srv/podman.sock'] }).endpoints.map((e) => [e.kind, e.label]),
    ).toEqual([
      ['docker', '/custom/docker.sock'],
      ['docker', '/var/run/docker.sock'],
      ['podman', '/srv/podman.sock'],
    ]);
    expect(engineEndpoints('auto', env, { docker: ['/srv/docker.sock'] }).endpoints.map((e) => e.label)).toEqual([
      '/srv/docker.sock',
      '/run/user/1000/podman/podman.sock',
      '/run/podman/podman.sock',
    ]);
    expect(
      engineEndpoints('podman', env, { docker: ['/srv/docker.sock'], podman: ['/srv/podman.sock'] }).endpoints.map(
        (e) => e.label,
      ),
    ).toEqual(['/srv/podman.sock']);
  });
});

describe('the create request', () => {
  it('labels, name and the default confinement', () => {
    const c = containerComponent('web', {
      image: 'img:1',
      ports: [{ host_port: 8080, container_port: 80 }],
      env: { A: '1' },
    });
    const name = containerName(c, () => 0.5);
    expect(name).toBe(`keystone-web-${c.hash.slice(3, 15)}-800000`);
    const o = createOptions(c, { name, ownerTag: 'ks-me', logDir: '/logs/web' });
    expect(o.Labels).toEqual({
      'io.keystone.component': 'web',
      'io.keystone.hash': c.hash,
      'io.keystone.owner': 'ks-me',
      'io.keystone.log-dir': '/logs/web',
    });
    expect(o.Env).toEqual(['A=1']);
    expect(o.HostConfig).toMatchObject({
      SecurityOpt: ['no-new-privileges'],
      CapDrop: ['ALL'],
      CapAdd: [],
      Privileged: false,
      NetworkMode: 'bridge',
      PortBindings: { '80/tcp': [{ HostPort: '8080' }] },
      RestartPolicy: { Name: 'no' },
    });
    expect(o.HostConfig).not.toHaveProperty('Memory');
    expect(o.HostConfig).not.toHaveProperty('Sysctls');
  });

  it("on Podman, a container with a network of its own binds low ports as Docker's do; the host's or another container's network is left alone", () => {
    const web = (network_mode?: string) =>
      containerComponent('web', { image: 'img:1', ...(network_mode && { network_mode }) });
    const request = (network_mode: string | undefined, engine: 'docker' | 'podman') =>
      createOptions(web(network_mode), { name: 'n', ownerTag: 't', logDir: '/l', engine }).HostConfig!;
    for (const mode of [undefined, 'none', 'keystone-net'])
      expect(request(mode, 'podman').Sysctls, mode).toEqual({ 'net.ipv4.ip_unprivileged_port_start': '0' });
    for (const mode of ['host', 'container:other']) expect(request(mode, 'podman'), mode).not.toHaveProperty('Sysctls');
    // Docker sets it itself: its request is unchanged.
    for (const mode of [undefined, 'host']) expect(request(mode, 'docker'), mode).not.toHaveProperty('Sysctls');
  });
});

describe("the engine's log stream", () => {
  it('timestamps to nanoseconds and back to `since`', () => {
    const ns = timestampNs('2026-11-29T12:00:01.000000042Z')!;
    expect(ns).toBe(BigInt(Date.parse('2026-11-29T12:00:01Z')) * 1_000_000n + 42n);
    expect(nsToSince(ns)).toBe(`${Date.parse('2026-11-29T12:00:01Z') / 1000}.000000042`);
    expect(timestampNs('2026-11-29T12:00:01.5Z')! - timestampNs('2026-11-29T12:00:01Z')!).toBe(500_000_000n);
    expect(timestampNs('not a time')).toBeUndefined();
  });

  it('frames split anywhere are put back together', () => {
    const frame = (stream: number, text: string) => {
      const payload = Buffer.from(text);
      const h = Buffer.alloc(8);
      h[0] = stream;
      h.writeUInt32BE(payload.length, 4);
      return Buffer.concat([h, payload]);
    };
    const all = Buffer.concat([frame(1, 'out\n'), frame(2, 'err\n'), frame(1, 'more\n')]);
    const p = new FrameParser();
    const got = [...p.push(all.subarray(0, 5)), ...p.push(all.subarray(5, 17)), ...p.push(all.subarray(17))];
    expect(got.map((f) => [f.stream, f.payload.toString()])).toEqual([
      [1, 'out\n'],
      [2, 'err\n'],
      [1, 'more\n'],
    ]);
  });
});

describe('image pulls', () => {
  // No registry is reachable here: the engine's pull stream (JSON lines, as Docker sends them) is replayed by a stand-in.
  const engineWith = (lines: string[]) =>
    ({
      getImage: () => ({
        inspect: () => Promise.reject(Object.assign(new Error('no such image'), { statusCode: 404 })),
      }),
      pull: () => Promise.resolve(Readable.from(lines.map((l) => Buffer.from(l + '\n')))),
    }) as unknown as Docker;

  it('reports progress with running byte totals over the layers', async () => {
    const seen: PullProgress[] = [];
    const pulled = await ensureImage(
      engineWith([
        '{"status":"Pulling from library/nginx","id":"1.27"}',
        '{"status":"Pulling fs layer","progressDetail":{},"id":"a"}',
        '{"status":"Downloading","progressDetail":{"current":100,"total":1000},"id":"a"}',
        '{"status":"Downloading","progressDetail":{"current":50,"total":500},"id":"b"}',
        '{"status":"Download complete","progressDetail":{},"id":"a"}',
        '{"status":"Status: Downloaded newer image for nginx:1.27"}',
      ]),
      'nginx:1.27',
      'if-not-present',
      { component: 'web', onProgress: (p) => seen.push(p) },
    );
    expect(pulled).toBe(true);
    expect(seen.map((p) => [p.status, p.currentBytes, p.totalBytes])).toEqual([
      ['Pulling from library/nginx', 0, 0],
      ['Pulling fs layer', 0, 0],
      ['Downloading', 100, 1000],
      ['Downloading', 150, 1500],
      ['Download complete', 1050, 1500],
      ['Status: Downloaded newer image for nginx:1.27', 1050, 1500],
    ]);
  });

  it("an error line in a successful stream is KS_IMAGE_PULL_FAILED with the engine's words", async () => {
    const err = await ensureImage(
      engineWith([
        '{"status":"Pulling fs layer","id":"a"}',
        '{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}',
      ]),
      'x:1',
      'always',
      { component: 'web' },
    ).catch((e: unknown) => e);
    expect(isContainerError(err, 'KS_IMAGE_PULL_FAILED')).toBe(true);
    expect((err as Error).message).toContain('manifest unknown');
  });
});
