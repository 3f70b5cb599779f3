// The host facts the device policy is checked against: real paths, this device's users, and the paths no bind mount
// may reach without --allow-privileged.
import { readFileSync, realpathSync } from 'node:fs';
import type { PolicyHost } from '../core/policy-check.js';
import { engineEndpoints } from './container-engine.js';
import { findGroup, findUser, parseGroup, parsePasswd, type UserDb } from './user-db.js';

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

function readUserDbSync(): UserDb {
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      return '';
    }
  };
  return { passwd: parsePasswd(read('/etc/passwd')), groups: parseGroup(read('/etc/group')) };
}

/** A PolicyHost over this machine: `realpath(3)`, /etc/passwd and /etc/group read at each check, the guarded paths. */
export function hostPolicyFacts(opts: { stateDir?: string; env?: NodeJS.ProcessEnv } = {}): PolicyHost {
  const sockets = engineEndpoints('auto', opts.env ?? process.env).endpoints.flatMap((e) => ('socketPath' in e ? [e.socketPath] : []));
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
      return gid === undefined ? undefined : { uid, gid };
    },
    guarded: [...new Set([...ALWAYS_GUARDED, ...sockets, ...(opts.stateDir !== undefined ? [opts.stateDir] : [])])],
  };
}
