// Where a packaged agent keeps the versions it updated itself to (SPEC §17), beside the package's own bundle in
// /usr/lib/keystone, which dpkg owns and an update never touches:
//
//   /var/lib/keystone-agent/            root's, 0755 (its files 0600): the launcher runs code from here as root, and
//                                       keystonectl run by anyone runs the version it holds
//     versions/<version>/               a staged version: the usr/lib/keystone of its .deb, checked to run
//     current -> versions/<version>     the version the launcher runs; absent: the package's /usr/lib/keystone
//     trial                             a version on probation (key=value lines, below) until it reports success
//     trial-starts                      one line per start of the version on probation (the launcher writes them)
//     failed                            the last package that was put back, and why (key=value lines)
//     state-before.db                   the state store as it was before the switch (for an old agent a newer one
//                                       migrated past)
//
// The files are key=value lines because the launcher (packaging/launchers/launch.sh) and the rollback
// (packaging/launchers/agent-rollback), shell scripts from the package that an update does not replace, read them
// too: they are what puts the previous version back when the new one does not work.
import { randomUUID } from 'node:crypto';
import { readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { syncDirectory, writeNew } from '../identity/durable-write.js';

/** The packaged agent's home; tests give their own. */
export const DEFAULT_AGENT_HOME = '/var/lib/keystone-agent';
/** The bundle dpkg installs; an update is staged beside it, never over it. */
export const PACKAGE_LIB = '/usr/lib/keystone';

export interface AgentHome {
  dir: string;
  versions: string;
  current: string;
  trial: string;
  trialStarts: string;
  failed: string;
  stateBefore: string;
}

export function agentHome(dir = DEFAULT_AGENT_HOME): AgentHome {
  return {
    dir,
    versions: join(dir, 'versions'),
    current: join(dir, 'current'),
    trial: join(dir, 'trial'),
    trialStarts: join(dir, 'trial-starts'),
    failed: join(dir, 'failed'),
    stateBefore: join(dir, 'state-before.db'),
  };
}

/** A version on probation: written before the switch, removed once it reported success for `commit`. */
export interface Trial {
  version: string;
  /** The version put back if this one fails: a staged version's name, or `package` for /usr/lib/keystone. */
  previous: string;
  previousVersion: string;
  commit: string;
  sha256: string;
  /** Seconds the new version has, from each of its starts, to report success. */
  deadline: number;
  /** ms since the epoch. */
  since: number;
  /**
   * Each running component's instance before the switch (a process's pid, `c-` and 12 digits of a container's id):
   * the new agent must adopt every one of them as it is.
   */
  pids: Record<string, string>;
}

/** A package that was put back, and why. */
export interface FailedUpdate {
  version: string;
  sha256: string;
  commit: string;
  reason: string;
  /** ms since the epoch. */
  at: number;
  /**
   * The agent itself did not work (it did not start, did not adopt, did not report in time): commits naming this
   * package report `failure` and it is not tried again. False when the new agent worked but the commit's plan failed:
   * the next commit naming the package tries it again.
   */
  blocks: boolean;
}

export function readTrial(home: AgentHome): Trial | undefined {
  const kv = readKeyValues(home.trial);
  if (!kv) return undefined;
  const pids: Record<string, string> = {};
  for (const pair of (kv.pids ?? '').split(',')) {
    const [name, pid] = pair.split(':');
    if (name && pid) pids[name] = pid;
  }
  return {
    version: kv.version ?? '',
    previous: kv.previous ?? 'package',
    previousVersion: kv.previous_version ?? '',
    commit: kv.commit ?? '',
    sha256: kv.sha256 ?? '',
    deadline: Number(kv.deadline ?? 300) || 300,
    since: Number(kv.since ?? 0) || 0,
    pids,
  };
}

export function writeTrial(home: AgentHome, t: Trial): void {
  const pids = Object.entries(t.pids)
    .map(([n, p]) => `${n}:${p}`)
    .join(',');
  writeKeyValues(home.dir, home.trial, {
    version: t.version,
    previous: t.previous,
    previous_version: t.previousVersion,
    commit: t.commit,
    sha256: t.sha256,
    deadline: String(t.deadline),
    since: String(t.since),
    pids,
  });
}

export function readFailed(home: AgentHome): FailedUpdate | undefined {
  const kv = readKeyValues(home.failed);
  if (!kv) return undefined;
  return {
    version: kv.version ?? '',
    sha256: kv.sha256 ?? '',
    commit: kv.commit ?? '',
    reason: kv.reason ?? 'the new agent did not work',
    at: Number(kv.at ?? 0) || 0,
    blocks: kv.blocks !== '0',
  };
}

export function writeFailed(home: AgentHome, f: FailedUpdate): void {
  writeKeyValues(home.dir, home.failed, {
    version: f.version,
    sha256: f.sha256,
    commit: f.commit,
    reason: f.reason,
    at: String(f.at),
    blocks: f.blocks ? '1' : '0',
  });
}

/** `key=value` lines; a value is one line (newlines become spaces). Undefined when the file is absent. */
export function readKeyValues(file: string): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

/** Written beside, made durable, renamed into place: a crash leaves the old file or the new one, whole. */
export function writeKeyValues(dir: string, file: string, kv: Record<string, string>): void {
  const text = Object.entries(kv)
    .map(([k, v]) => `${k}=${v.replace(/[\r\n]+/g, ' ')}\n`)
    .join('');
  const temp = join(dir, `.${randomUUID()}.tmp`);
  writeNew(temp, text, 0o600);
  try {
    renameSync(temp, file);
  } catch (e) {
    rmSync(temp, { force: true });
    throw e;
  }
  syncDirectory(dir);
}

export type { AgentUpdateView } from './agent-update-view.js';
