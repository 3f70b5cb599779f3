import { describe, expect, it } from 'vitest';
import { buildPrivileges, capabilitySetArg, defaultRunUser, type SecuritySpec } from '../../src/runtime/privileges.js';
import { isRuntimeError } from '../../src/runtime/runtime-error.js';
import { parseGroup, parsePasswd, type UserDb } from '../../src/state-dir/user-db.js';

const db: UserDb = {
  passwd: parsePasswd(
    [
      '# comment',
      'root:x:0:0:root:/root:/bin/bash',
      'influx:x:998:997:InfluxDB:/var/lib/influx:/usr/sbin/nologin',
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      '+nis',
      'broken:x:notanumber:1::/:/bin/sh',
      '',
    ].join('\n'),
  ),
  groups: parseGroup(
    ['root:x:0:', 'influx:x:997:', 'dialout:x:20:influx,other', 'nogroup:x:65534:', 'web:x:33:'].join('\n'),
  ),
};
const root = { uid: 0, gid: 0, name: 'root', home: '/root' };
const agentUser = { uid: 1000, gid: 1000, name: 'dev', home: '/home/dev' };
const sec = (s: Partial<SecuritySpec>): SecuritySpec => ({ no_new_privileges: true, capabilities: [], ...s });

describe('user database parsing', () => {
  it('skips comments, NIS and malformed lines', () => {
    expect(db.passwd.map((u) => u.name)).toEqual(['root', 'influx', 'nobody']);
    expect(db.groups.find((g) => g.name === 'dialout')?.members).toEqual(['influx', 'other']);
  });
});

describe('buildPrivileges as root', () => {
  it('drops to a named user with its primary group, supplementary groups, no_new_privs and no capabilities', () => {
    const p = buildPrivileges(sec({ user: 'influx' }), root, db);
    expect(p.setprivArgs).toEqual([
      '--reuid=998',
      '--regid=997',
      '--init-groups',
      '--no-new-privs',
      '--inh-caps=-all',
      '--ambient-caps=-all',
      '--bounding-set=-all',
    ]);
    expect(p.identity).toMatchObject({ uid: 998, gid: 997, name: 'influx', home: '/var/lib/influx' });
    expect(p.identity.gids.sort()).toEqual([20, 997]);
    expect(p.switchesUser).toBe(true);
    expect(p.note).toBeUndefined();
  });

  it('grants exactly the listed capabilities in the inheritable, ambient and bounding sets', () => {
    const p = buildPrivileges(sec({ user: 'nobody', capabilities: ['CAP_NET_BIND_SERVICE'] }), root, db);
    expect(p.setprivArgs.slice(-3)).toEqual([
      '--inh-caps=-all,+net_bind_service',
      '--ambient-caps=-all,+net_bind_service',
      '--bounding-set=-all,+net_bind_service',
    ]);
    expect(capabilitySetArg(['CAP_SYS_TIME', 'CAP_NET_RAW', 'CAP_NET_RAW'])).toBe('-all,+net_raw,+sys_time');
  });

  it('resolves an explicit group by name or number, and a numeric uid with a group', () => {
    expect(buildPrivileges(sec({ user: 'influx:web' }), root, db).setprivArgs.slice(0, 3)).toEqual([
      '--reuid=998',
      '--regid=33',
      '--init-groups',
    ]);
    expect(buildPrivileges(sec({ user: '998:4242' }), root, db).setprivArgs.slice(0, 3)).toEqual([
      '--reuid=998',
      '--regid=4242',
      '--init-groups',
    ]);
    const bare = buildPrivileges(sec({ user: '4321:4321' }), root, db);
    expect(bare.setprivArgs.slice(0, 3)).toEqual(['--reuid=4321', '--regid=4321', '--clear-groups']);
    expect(bare.identity.home).toBe('/');
  });

  it('omits --no-new-privs only when the recipe says so', () => {
    expect(buildPrivileges(sec({ user: 'nobody', no_new_privileges: false }), root, db).setprivArgs).not.toContain(
      '--no-new-privs',
    );
  });

  it('without a user runs as the default unprivileged user (keystone where it exists, else nobody), never as root', () => {
    const p = buildPrivileges(undefined, root, db);
    expect(p.setprivArgs).toEqual([
      '--reuid=65534',
      '--regid=65534',
      '--init-groups',
      '--no-new-privs',
      '--inh-caps=-all',
      '--ambient-caps=-all',
      '--bounding-set=-all',
    ]);
    expect(p.switchesUser).toBe(true);
    expect(buildPrivileges(sec({}), root, db).identity.uid).toBe(65534);
    const withKeystone: UserDb = {
      ...db,
      passwd: [...db.passwd, ...parsePasswd('keystone:x:990:990::/var/lib/keystone:/usr/sbin/nologin')],
    };
    expect(buildPrivileges(undefined, root, withKeystone).identity).toMatchObject({
      uid: 990,
      gid: 990,
      name: 'keystone',
    });
    expect(defaultRunUser(withKeystone)).toBe('keystone');
    // Neither: refused, with what to do, rather than falling back to root.
    const bare: UserDb = { passwd: db.passwd.filter((u) => u.name === 'root'), groups: db.groups };
    expect(() => buildPrivileges(undefined, root, bare)).toThrow(/adduser --system/);
  });

  it('uid or gid 0 is refused with KS_ROOT_NOT_PERMITTED unless the device allows root', () => {
    for (const user of ['root', '0:0', 'nobody:root', 'influx:0']) {
      let err: unknown;
      try {
        buildPrivileges(sec({ user }), root, db);
      } catch (e) {
        err = e;
      }
      expect(isRuntimeError(err, 'KS_ROOT_NOT_PERMITTED'), user).toBe(true);
      expect(buildPrivileges(sec({ user }), root, db, { allowRoot: true }).setprivArgs).toContain('--no-new-privs');
    }
  });

  it('refuses unknown users and groups with KS_USER_UNKNOWN', () => {
    for (const user of ['ghost', 'influx:ghosts', '4321']) {
      let err: unknown;
      try {
        buildPrivileges(sec({ user }), root, db);
      } catch (e) {
        err = e;
      }
      expect(isRuntimeError(err, 'KS_USER_UNKNOWN'), user).toBe(true);
    }
  });
});

describe('buildPrivileges when the agent is not root', () => {
  it('keeps the agent user, changes no ids or capabilities, still sets no_new_privs, and says what it could not apply', () => {
    const p = buildPrivileges(sec({ user: 'ghost', capabilities: ['CAP_NET_BIND_SERVICE'] }), agentUser, db);
    expect(p.setprivArgs).toEqual(['--no-new-privs']);
    expect(p.identity).toMatchObject({ uid: 1000, gid: 1000, home: '/home/dev' });
    expect(p.switchesUser).toBe(false);
    expect(p.note).toMatch(/not root.*"ghost".*CAP_NET_BIND_SERVICE/);
    expect(buildPrivileges(sec({}), agentUser, db).note).toBeUndefined();
    expect(buildPrivileges(sec({ no_new_privileges: false }), agentUser, db).setprivArgs).toEqual([]);
  });
});
