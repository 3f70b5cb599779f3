// The device policy (SPEC §5) as a pure check: every way a signed recipe could reach host root is refused with its
// TOML path and the flag that would allow it, and each flag lifts exactly its own refusal.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalCapability,
  canonicalHostPath,
  DEFAULT_DEVICE_POLICY,
  devicePolicyFromView,
  devicePolicyView,
  isWithin,
  type DevicePolicy,
} from '../../src/core/device-policy.js';
import { checkDevicePolicy, isPrivateNetwork, type PolicyHost } from '../../src/core/policy-check.js';
import { parseRecipe } from '../../src/core/recipe.js';
import { containerComponent } from '../runtime/container-fixtures.js';
import { processComponent } from '../runtime/runtime-fixtures.js';

/** A host where /srv/link points at /, /var/run is /run, and `admin` is a second uid 0. */
const host: PolicyHost = {
  realpath: (p) => {
    if (p === '/srv/link' || p.startsWith('/srv/link/')) return '/' + p.slice('/srv/link/'.length);
    if (p.startsWith('/var/run/')) return p.slice(4);
    return [
      '/',
      '/srv',
      '/srv/data',
      '/srv/data/www',
      '/dev/ttyUSB0',
      '/run',
      '/run/docker.sock',
      '/var/lib/keystone',
      '/etc',
    ].includes(p)
      ? p
      : undefined;
  },
  resolveUser: (spec) => {
    const users: Record<string, { uid: number; gid: number }> = {
      nobody: { uid: 65534, gid: 65534 },
      admin: { uid: 0, gid: 0 },
      root: { uid: 0, gid: 0 },
      app: { uid: 1000, gid: 1000 },
    };
    const [u = '', g] = spec.split(':');
    const user = users[u] ?? (/^\d+$/.test(u) ? { uid: Number(u), gid: Number(u) } : undefined);
    if (!user || g === undefined) return user;
    return { uid: user.uid, gid: g === 'root' ? 0 : Number(g) };
  },
  guarded: ['/var/run/docker.sock', '/var/lib/keystone', '/proc'],
};
const policy = (p: Partial<DevicePolicy> = {}): DevicePolicy => ({ ...DEFAULT_DEVICE_POLICY, ...p });
const issues = (c: Parameters<typeof checkDevicePolicy>[0], p: Partial<DevicePolicy> = {}) =>
  checkDevicePolicy(c, policy(p), host).map((i) => [i.code, i.path, i.flag]);
const container = (fields: Record<string, unknown>) =>
  containerComponent('web', { image: 'img:1', ...fields } as Parameters<typeof containerComponent>[1]);
const at = (f: string) => `lifecycle.run.container.${f}`;

describe('containers: finding 1 (host root through mounts, capabilities, root)', () => {
  it('a writable mount of / is refused, and so are the engine socket and the agent state directory even when / is allowed', () => {
    const c = container({ user: '65534:65534', mounts: [{ source: '/', target: '/host' }] });
    expect(issues(c)).toEqual([['KS_MOUNT_NOT_PERMITTED', at('mounts[0].source'), '--allow-privileged']]);
    // / contains the socket: --allow-mount / alone does not give it away.
    expect(issues(c, { allowMounts: ['/'] })).toEqual([
      ['KS_MOUNT_NOT_PERMITTED', at('mounts[0].source'), '--allow-privileged'],
    ]);
    expect(issues(c, { allowMounts: ['/'], allowPrivileged: true })).toEqual([]);
    const sock = container({
      user: '65534:65534',
      mounts: [{ source: '/run/docker.sock', target: '/var/run/docker.sock' }],
    });
    expect(issues(sock, { allowMounts: ['/run'] })).toEqual([
      ['KS_MOUNT_NOT_PERMITTED', at('mounts[0].source'), '--allow-privileged'],
    ]);
    const state = container({
      user: '65534:65534',
      mounts: [{ source: '/var/lib/keystone/api-token', target: '/t', read_only: true }],
    });
    expect(issues(state, { allowMounts: ['/var/lib'] })[0]).toEqual([
      'KS_MOUNT_NOT_PERMITTED',
      at('mounts[0].source'),
      '--allow-privileged',
    ]);
  });

  it('host paths are mountable only under an allowed prefix, by whole segments, after .. and links are resolved', () => {
    const m = (source: string) =>
      container({ user: '65534:65534', mounts: [{ source, target: '/data', read_only: true }] });
    expect(issues(m('/srv/data/www'))).toEqual([
      ['KS_MOUNT_NOT_PERMITTED', at('mounts[0].source'), '--allow-mount /srv/data/www'],
    ]);
    expect(issues(m('/srv/data/www'), { allowMounts: ['/srv/data'] })).toEqual([]);
    expect(issues(m('/srv/database'), { allowMounts: ['/srv/data'] })[0]?.[0]).toBe('KS_MOUNT_NOT_PERMITTED');
    expect(issues(m('/srv/data/../../etc'), { allowMounts: ['/srv/data'] })[0]?.[0]).toBe('KS_MOUNT_NOT_PERMITTED');
    // A link under the allowed prefix that leads to / is judged by where it leads.
    expect(issues(m('/srv/link/etc'), { allowMounts: ['/srv'] })).toEqual([
      ['KS_MOUNT_NOT_PERMITTED', at('mounts[0].source'), '--allow-mount /etc'],
    ]);
  });

  it('root in the container with a writable host mount needs --allow-root; a numeric non-root user or a read-only mount does not', () => {
    const allowed = { allowMounts: ['/srv/data'] };
    const rw = (user?: string) =>
      container({ ...(user !== undefined && { user }), mounts: [{ source: '/srv/data', target: '/d' }] });
    expect(issues(rw(), allowed)).toEqual([['KS_ROOT_NOT_PERMITTED', at('mounts[0].read_only'), '--allow-root']]);
    expect(issues(rw('0:0'), allowed)).toEqual([['KS_ROOT_NOT_PERMITTED', at('user'), '--allow-root']]);
    expect(issues(rw('root'), allowed)).toEqual([['KS_ROOT_NOT_PERMITTED', at('user'), '--allow-root']]);
    // A name is resolved inside the image, where it may well be root.
    expect(issues(rw('app'), allowed)).toEqual([['KS_ROOT_NOT_PERMITTED', at('user'), '--allow-root']]);
    expect(issues(rw('1000:0'), allowed)).toEqual([['KS_ROOT_NOT_PERMITTED', at('user'), '--allow-root']]);
    expect(issues(rw('1000:1000'), allowed)).toEqual([]);
    expect(issues(rw(), { ...allowed, allowRoot: true })).toEqual([]);
    expect(issues(container({ mounts: [{ source: '/srv/data', target: '/d', read_only: true }] }), allowed)).toEqual(
      [],
    );
    // No mount at all: root in the container reaches nothing of the host's.
    expect(issues(container({}))).toEqual([]);
  });

  it('capabilities beyond the safe container set need --allow-capability, each its own', () => {
    const c = container({ capabilities: ['CAP_NET_BIND_SERVICE', 'CAP_SYS_ADMIN', 'CAP_CHOWN', 'CAP_SYS_MODULE'] });
    expect(issues(c)).toEqual([
      ['KS_CAPABILITY_NOT_PERMITTED', at('capabilities[1]'), '--allow-capability CAP_SYS_ADMIN'],
      ['KS_CAPABILITY_NOT_PERMITTED', at('capabilities[3]'), '--allow-capability CAP_SYS_MODULE'],
    ]);
    expect(issues(c, { allowCapabilities: ['CAP_SYS_ADMIN'] })).toEqual([
      ['KS_CAPABILITY_NOT_PERMITTED', at('capabilities[3]'), '--allow-capability CAP_SYS_MODULE'],
    ]);
  });

  it('privileged and devices need their own flags', () => {
    expect(issues(container({ privileged: true }))).toEqual([
      ['KS_CONTAINER_NOT_PERMITTED', at('privileged'), '--allow-privileged'],
    ]);
    expect(issues(container({ privileged: true }), { allowPrivileged: true })).toEqual([]);
    const dev = container({ devices: ['/dev/ttyUSB0', '/dev/sda'] });
    expect(issues(dev)).toEqual([
      ['KS_DEVICE_NOT_PERMITTED', at('devices[0]'), '--allow-device /dev/ttyUSB0'],
      ['KS_DEVICE_NOT_PERMITTED', at('devices[1]'), '--allow-device /dev/sda'],
    ]);
    expect(issues(dev, { allowDevices: ['/dev/ttyUSB0'] })).toEqual([
      ['KS_DEVICE_NOT_PERMITTED', at('devices[1]'), '--allow-device /dev/sda'],
    ]);
  });
});

describe('containers: finding 2 (host namespaces in any spelling)', () => {
  it.each([
    ['network_mode', 'host'],
    ['network_mode', 'HOST'],
    ['network_mode', 'container:keystone-db-1'],
    ['network_mode', 'container:some-foreign-container'],
    ['network_mode', 'ns:/proc/1/ns/net'],
    ['network_mode', 'slirp4netns:allow_host_loopback=true'],
    ['pid_mode', 'host'],
    ['pid_mode', 'container:db'],
    ['ipc_mode', 'host'],
    ['ipc_mode', 'container:db'],
    ['uts_mode', 'host'],
    ['userns_mode', 'host'],
  ])('%s = "%s" is refused without --allow-host-namespaces', (field, mode) => {
    const c = container({ [field]: mode });
    expect(issues(c)).toEqual([['KS_CONTAINER_NOT_PERMITTED', at(field), '--allow-host-namespaces']]);
    expect(issues(c, { allowHostNamespaces: true })).toEqual([]);
  });

  it.each([
    ['network_mode', 'bridge'],
    ['network_mode', 'none'],
    ['network_mode', 'edge-net'],
    ['pid_mode', 'private'],
    ['ipc_mode', 'shareable'],
    ['ipc_mode', 'none'],
    ['uts_mode', 'private'],
    ['userns_mode', 'private'],
  ])('%s = "%s" is a private namespace: allowed', (field, mode) => {
    expect(issues(container({ [field]: mode }))).toEqual([]);
  });

  it('no network mode with a colon is private, whatever comes before it', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        expect(isPrivateNetwork(`${a}:${b}`)).toBe(false);
      }),
    );
  });
});

describe('processes: finding 3 (root users) and capabilities', () => {
  const proc = (security?: { user?: string; capabilities?: string[] }) =>
    processComponent(
      'api',
      { command: 'node' },
      security ? { security: { no_new_privileges: true, capabilities: [], ...security } } : {},
    );
  const sec = (f: string) => `lifecycle.run.security.${f}`;

  it.each(['root', '0', '0:0', 'root:root', 'admin', 'nobody:0', 'nobody:root'])(
    'user = "%s" (uid or gid 0) needs --allow-root',
    (user) => {
      expect(issues(proc({ user }))).toEqual([['KS_ROOT_NOT_PERMITTED', sec('user'), '--allow-root']]);
      expect(issues(proc({ user }), { allowRoot: true })).toEqual([]);
    },
  );

  it('no user, or an unprivileged one, passes (no user runs as the default unprivileged user)', () => {
    expect(issues(proc())).toEqual([]);
    expect(issues(proc({ user: 'nobody' }))).toEqual([]);
    expect(issues(proc({ user: '1000:1000' }))).toEqual([]);
  });

  it('host capabilities beyond the safe process set (which has no root-equivalent one) need --allow-capability', () => {
    const c = proc({ user: 'nobody', capabilities: ['CAP_NET_BIND_SERVICE', 'CAP_SETUID', 'CAP_DAC_OVERRIDE'] });
    expect(issues(c)).toEqual([
      ['KS_CAPABILITY_NOT_PERMITTED', sec('capabilities[1]'), '--allow-capability CAP_SETUID'],
      ['KS_CAPABILITY_NOT_PERMITTED', sec('capabilities[2]'), '--allow-capability CAP_DAC_OVERRIDE'],
    ]);
    expect(issues(c, { allowCapabilities: ['CAP_SETUID', 'CAP_DAC_OVERRIDE'] })).toEqual([]);
  });

  it('a composite member is named at its own run path', () => {
    const c = { ...proc({ user: 'root' }), runPath: 'lifecycle.services.web' };
    expect(issues(c)).toEqual([['KS_ROOT_NOT_PERMITTED', 'lifecycle.services.web.security.user', '--allow-root']]);
  });
});

describe('policy values', () => {
  it('paths are compared by whole segments', () => {
    expect(isWithin('/srv/data', '/srv/data')).toBe(true);
    expect(isWithin('/srv/data/x', '/srv/data')).toBe(true);
    expect(isWithin('/srv/database', '/srv/data')).toBe(false);
    expect(isWithin('/anything', '/')).toBe(true);
    expect(canonicalHostPath('/srv/data/../x/')).toBe('/srv/x');
    expect(canonicalHostPath('srv')).toBeUndefined();
  });

  it('canonical paths never escape a prefix they are judged within', () => {
    const seg = fc.constantFrom('a', 'b', '..', '.', 'data', '');
    fc.assert(
      fc.property(fc.array(seg, { maxLength: 8 }), (segs) => {
        const p = canonicalHostPath('/srv/data/' + segs.join('/'))!;
        if (isWithin(p, '/srv/data')) expect(p === '/srv/data' || p.startsWith('/srv/data/')).toBe(true);
        expect(p.split('/')).not.toContain('..');
      }),
    );
  });

  it('capability spellings', () => {
    expect(canonicalCapability('net_admin')).toBe('CAP_NET_ADMIN');
    expect(canonicalCapability('CAP_SYS_ADMIN')).toBe('CAP_SYS_ADMIN');
    expect(canonicalCapability('CAP_NOPE')).toBeUndefined();
  });

  it('the view round-trips, and what is not a view is refused', () => {
    const p = policy({ allowMounts: ['/srv'], allowRoot: true, allowCapabilities: ['CAP_NET_ADMIN'] });
    expect(devicePolicyFromView(JSON.parse(JSON.stringify(devicePolicyView(p))))).toEqual(p);
    expect(devicePolicyFromView({ allowPrivileged: 'yes' })).toBeUndefined();
    expect(devicePolicyView(DEFAULT_DEVICE_POLICY).safeCapabilities.process).toEqual([
      'CAP_NET_BIND_SERVICE',
      'CAP_NET_BROADCAST',
      'CAP_WAKE_ALARM',
    ]);
  });
});

describe('the second review: ids beyond range, root-equivalent groups, no_new_privileges, bare container uids, mount paths others can change', () => {
  const proc = (security: { user?: string; no_new_privileges?: boolean }) =>
    processComponent(
      'api',
      { command: 'node' },
      { security: { no_new_privileges: true, capabilities: [], ...security } },
    );
  const withGroups: PolicyHost = {
    ...host,
    resolveUser: (spec) =>
      spec === 'pi'
        ? { uid: 1000, gid: 1000, gids: [1000, 106] }
        : spec === 'nobody:docker'
          ? { uid: 65534, gid: 106, gids: [106] }
          : host.resolveUser(spec),
    rootGroups: [0, 106, 6],
  };
  const check = (c: Parameters<typeof checkDevicePolicy>[0], p: Partial<DevicePolicy> = {}, h = withGroups) =>
    checkDevicePolicy(c, policy(p), h).map((i) => [i.code, i.path, i.flag]);

  it('uid or gid (uid_t)-1 and beyond, which setpriv and chown read as "leave unchanged", counts as root', () => {
    // The schema refuses them already (below); the policy must not rely on that alone.
    for (const user of ['4294967295:4294967295', '4294967295', '1000:4294967296']) {
      const c = proc({ user: '1000:1000' });
      c.recipe.lifecycle.run.security!.user = user;
      expect(check(c), user).toEqual([['KS_ROOT_NOT_PERMITTED', 'lifecycle.run.security.user', '--allow-root']]);
    }
    const r = parseRecipe(
      'recipes/x.toml',
      [
        '[metadata]',
        'name = "com.acme.x"',
        'version = "1.0.0"',
        '[lifecycle.run.exec]',
        'command = "sleep"',
        '[lifecycle.run.security]',
        'user = "4294967295:4294967295"',
      ].join('\n'),
    );
    expect(r.diagnostics.map((d) => [d.path, d.line])).toEqual([['lifecycle.run.security.user', 7]]);
    expect(r.diagnostics[0]!.message).toContain('at most 2147483646');
  });

  it("a user whose primary or supplementary group is root in all but name (the engine socket's, disk) needs --allow-root", () => {
    expect(check(proc({ user: 'nobody:docker' }))).toEqual([
      ['KS_ROOT_NOT_PERMITTED', 'lifecycle.run.security.user', '--allow-root'],
    ]);
    expect(check(proc({ user: 'pi' }))).toEqual([
      ['KS_ROOT_NOT_PERMITTED', 'lifecycle.run.security.user', '--allow-root'],
    ]);
    expect(check(proc({ user: 'nobody' }))).toEqual([]);
    expect(check(proc({ user: 'pi' }), { allowRoot: true })).toEqual([]);
  });

  it('no_new_privileges = false (setuid programs could make it root) needs --allow-root', () => {
    expect(check(proc({ user: 'nobody', no_new_privileges: false }))).toEqual([
      ['KS_ROOT_NOT_PERMITTED', 'lifecycle.run.security.no_new_privileges', '--allow-root'],
    ]);
    expect(check(proc({ user: 'nobody', no_new_privileges: false }), { allowRoot: true })).toEqual([]);
  });

  it('a container with a writable host mount needs both ids: a bare uid may get gid 0 from the engine', () => {
    const rw = (user: string) => container({ user, mounts: [{ source: '/srv/data', target: '/d' }] });
    expect(check(rw('1000'), { allowMounts: ['/srv/data'] })).toEqual([
      ['KS_ROOT_NOT_PERMITTED', at('user'), '--allow-root'],
    ]);
    const beyond = rw('1000:1000');
    beyond.recipe.lifecycle.run.container!.user = '4294967295:1000';
    expect(check(beyond, { allowMounts: ['/srv/data'] })).toEqual([
      ['KS_ROOT_NOT_PERMITTED', at('user'), '--allow-root'],
    ]);
    expect(check(rw('1000:1000'), { allowMounts: ['/srv/data'] })).toEqual([]);
  });

  it('a mount source under a directory another user can change (swap for a link before the start) is refused', () => {
    const h: PolicyHost = { ...host, changeableBy: (d) => (d === '/srv/data/www' ? 'uid 1000, its owner' : undefined) };
    const m = (source: string) =>
      container({ user: '65534:65534', mounts: [{ source, target: '/x', read_only: true }] });
    expect(check(m('/srv/data/www/site'), { allowMounts: ['/srv/data'] }, h)).toEqual([
      ['KS_MOUNT_NOT_PERMITTED', at('mounts[0].source'), '--allow-mount /srv/data/www/site'],
    ]);
    // The allowed directory itself may be anyone's: it is the source, nothing above it is the user's.
    expect(check(m('/srv/data/www'), { allowMounts: ['/srv/data/www'] }, h)).toEqual([]);
    expect(check(m('/srv/data/www'), { allowMounts: ['/srv/data'] }, h)).toEqual([]);
  });
});
