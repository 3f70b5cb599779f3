// What the checks read of the machine beyond the files they look at, passed in so that tests can set the clock, the
// free space or the engine's sockets on cue; systemFacts() is the real machine.
import { statfs } from 'node:fs/promises';
import type { SocketPaths } from '../runtime/container-engine.js';
import { currentAgentIdentity, type AgentIdentity } from '../runtime/privileges.js';
import { readUserDb, type UserDb } from '../state-dir/user-db.js';

export interface DoctorFacts {
  /** ms since the epoch. */
  now: () => number;
  /** The running Node's version (`20.19.0`). */
  nodeVersion: string;
  /** The setpriv the process runtime runs (its default, /usr/bin/setpriv). */
  setprivPath: string;
  /** Free blocks for unprivileged users and the block size of the file system holding `path`. */
  statfs: (path: string) => Promise<{ bavail: number; bsize: number }>;
  /** DOCKER_HOST and XDG_RUNTIME_DIR, where the engine is looked for. */
  env: NodeJS.ProcessEnv;
  /** Replaces the engine's default socket paths (tests point them at files that do not exist). */
  engineSockets?: SocketPaths;
  userDb: () => Promise<UserDb>;
  /** Who the agent runs as: this process (doctor is run as the agent's user). */
  agent: AgentIdentity;
  /** How long the Git remote may take to list the ref. */
  gitTimeoutMs: number;
  /** Less free space than this in the state directory's file system fails the disk check. */
  minFreeBytes: number;
}

/** 10 s: a remote slower than that to list one ref is a remote the agent will keep timing out on. */
export const GIT_TIMEOUT_MS = 10_000;

/** 512 MiB: room for a few artifact downloads and rotated logs (10 MiB × 5 per component by default). */
export const MIN_FREE_BYTES = 512 * 1024 * 1024;

export function systemFacts(opts: { env: NodeJS.ProcessEnv; now: () => number }): DoctorFacts {
  return {
    now: opts.now,
    nodeVersion: process.versions.node,
    setprivPath: '/usr/bin/setpriv',
    statfs: async (path) => {
      const s = await statfs(path);
      return { bavail: s.bavail, bsize: s.bsize };
    },
    env: opts.env,
    userDb: () => readUserDb(),
    agent: currentAgentIdentity(),
    gitTimeoutMs: GIT_TIMEOUT_MS,
    minFreeBytes: MIN_FREE_BYTES,
  };
}
