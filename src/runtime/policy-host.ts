// The host facts the device policy is checked against: real paths, this device's users, and the paths no bind mount
// may reach without --allow-privileged.
import { lstatSync, realpathSync, statSync } from 'node:fs';
import type { PolicyHost } from '../core/policy-check.js';
import { engineEndpoints, type SocketPaths } from './container-engine.js';
import { findGroup, findUser, groupsOf, readUserDbSync } from '../state-dir/user-db.js';

/** Groups that are root in all but name: the engine's (its socket), raw disks. */
const ROOT_GROUP_NAMES = ['docker', 'disk'];

/**
 * Whoever reaches one of these from a container is root on the host: the engines' sockets and data (a socket starts
 * privileged containers; a writable image store is every container's root file system), the kernel's own files
 * (/proc/sys/kernel/core_pattern runs a program as root), and — beside them at run time — the agent's state.
 */
const ALWAYS_GUARDED = [
  '/var/run/docker.sock',
  '/run/docker.sock',
  '/run/podman/podman.sock',
  '/run/containerd',
  '/var/lib/docker',
  '/var/lib/containers',
  '/var/lib/containerd',
  '/proc',
  '/sys',
];

/** A PolicyHost over this machine: `realpath(3)`, /etc/passwd and /etc/group read at each check, the guarded paths. */
export function hostPolicyFacts(
  opts: { stateDir?: string; env?: NodeJS.ProcessEnv; sockets?: SocketPaths } = {},
): PolicyHost {
  const me = process.geteuid?.() ?? 0;
  // The sockets the agent was pointed at (--docker-socket, --podman-socket, DOCKER_HOST) and the default ones alike.
  const sockets = [
    ...engineEndpoints('auto', opts.env ?? process.env).endpoints,
    ...(opts.sockets ? engineEndpoints('auto', opts.env ?? process.env, opts.sockets).endpoints : []),
  ].flatMap((e) => ('socketPath' in e ? [e.socketPath] : []));
  const guarded = [
    ...new Set([...ALWAYS_GUARDED, ...sockets, ...(opts.stateDir !== undefined ? [opts.stateDir] : [])]),
  ];
  return {
    realpath(path) {
      try {
        return realpathSync.native(path);
      } catch {
        return undefined;
      }
    },
    resolveUser(spec) {
      // Read at each call: a user added since the last revision must count.
      const db = readUserDbSync();
      const [u = '', g] = spec.split(':');
      const user = findUser(db, u);
      const uid = user?.uid ?? (/^\d+$/.test(u) ? Number(u) : undefined);
      if (uid === undefined) return undefined;
      const gid = g === undefined ? user?.gid : (findGroup(db, g)?.gid ?? (/^\d+$/.test(g) ? Number(g) : undefined));
      // setpriv --init-groups gives a passwd user its supplementary groups too.
      return gid === undefined ? undefined : { uid, gid, gids: user ? groupsOf(db, user.name, gid) : [gid] };
    },
    get rootGroups() {
      const db = readUserDbSync();
      const byName = ROOT_GROUP_NAMES.flatMap((n) => db.groups.filter((g) => g.name === n).map((g) => g.gid));
      // Whoever may open the engine's socket starts privileged containers, whatever its group is called.
      const ofSockets = guarded.flatMap((p) => {
        try {
          const st = statSync(p);
          return st.isSocket() && (st.mode & 0o060) !== 0 ? [st.gid] : [];
        } catch {
          return [];
        }
      });
      return [...new Set([0, ...byName, ...ofSockets])];
    },
    changeableBy(dir) {
      let st;
      try {
        st = lstatSync(dir);
      } catch {
        return undefined;
      }
      if (st.isSymbolicLink()) return 'whoever wrote the link';
      if (st.uid !== 0 && st.uid !== me) return `uid ${st.uid}, its owner`;
      if (st.mode & 0o002 && !(st.mode & 0o1000)) return 'every user';
      if (st.mode & 0o020 && st.gid !== 0) return `the members of group ${st.gid}`;
      return undefined;
    },
    guarded,
  };
}
