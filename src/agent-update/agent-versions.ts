// The agent's versions in its home, on disk (SPEC §17): which one `current` points at, the switch to a staged one, the
// prune of the others, and the store copy put back after a version was. Apart from agent-updater.ts, which decides
// when; these say how.
import { chmodSync, existsSync, lstatSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { syncDirectory } from '../identity/durable-write.js';
import { readFailed, writeTrial, type AgentHome, type Trial } from './agent-home.js';
import { switchCrashPoint } from './switch-crash-point.js';

/** What a switch reads of the updater's dependencies (agent-updater.ts's AgentUpdaterDeps). */
export interface SwitchDeps {
  home: AgentHome;
  /** This agent's version: the one a failed trial goes back to. */
  version: string;
  /** A consistent copy of the state store, taken before the switch (StateStore.snapshotTo). */
  snapshot?: (file: string) => void;
  now: () => number;
  /** Each live component's instance (name → a process's pid, `c-` and 12 digits of a container's id). */
  instances: () => Record<string, string>;
}

/** Switches `current` to the staged `dirName`, on probation (`t`): the trial written first, then the link. */
export function switchToVersion(
  d: SwitchDeps,
  dirName: string,
  t: Pick<Trial, 'version' | 'sha256' | 'commit' | 'deadline'>,
): void {
  const { home } = d;
  const previous = currentVersionDir(home) ?? 'package';
  rmSync(home.trialStarts, { force: true });
  // The store as this version left it: should the new one migrate it past what this one reads and then be put back,
  // this one starts from the copy rather than not at all (restoreStateBefore).
  d.snapshot?.(home.stateBefore);
  switchCrashPoint('update-after-snapshot');
  // The trial first, then `current`: cut between the two, the launcher starts the old version, which finds a trial
  // of another version and records the package as failed (trial-on-start.ts) rather than running it unproven.
  writeTrial(home, {
    ...t,
    previous,
    previousVersion: d.version,
    since: d.now(),
    pids: d.instances(),
  });
  switchCrashPoint('update-after-trial');
  const temp = join(home.dir, `.current.${process.pid}`);
  rmSync(temp, { force: true });
  symlinkSync(join('versions', dirName), temp);
  renameSync(temp, home.current);
  syncDirectory(home.dir);
  switchCrashPoint('update-after-switch');
}

/** Versions neither current nor the one it came from (kept for an operator to go back to by hand): removed. */
export function pruneVersions(home: AgentHome, previous: string): void {
  const keep = new Set([currentVersionDir(home), previous]);
  let names: string[];
  try {
    names = readdirSync(home.versions);
  } catch {
    return;
  }
  // A .staging-* directory is a staging cut short (a kill during the unpacking): nothing runs from it.
  for (const name of names) if (!keep.has(name)) rmSync(join(home.versions, name), { recursive: true, force: true });
}

/**
 * An agent put back after an update, whose state store the new version migrated past what it reads
 * (KS_STATE_SCHEMA_TOO_NEW): the store as it was before the switch goes back in place, the newer one is kept beside
 * it (`state.db.newer-<ms>`). Only after a failed update, and once: true when it put the copy back.
 */
export function restoreStateBefore(home: AgentHome, dbFile: string, now: number, log: Logger): boolean {
  if (!readFailed(home) || !existsSync(home.stateBefore)) return false;
  const aside = `${dbFile}.newer-${now}`;
  renameSync(dbFile, aside);
  for (const suffix of ['-wal', '-shm']) rmSync(`${dbFile}${suffix}`, { force: true });
  renameSync(home.stateBefore, dbFile);
  chmodSync(dbFile, 0o600);
  log.warn(
    { file: dbFile, kept: aside },
    'agent update: the version put back cannot read the state store the new version migrated; it starts from the copy taken before the switch',
  );
  return true;
}

/** The staged version `current` points at; undefined: the package's own bundle runs. */
export function currentVersionDir(home: AgentHome): string | undefined {
  try {
    if (!lstatSync(home.current).isSymbolicLink()) return undefined;
    const target = readlinkSync(home.current);
    const name = basename(target);
    return existsSync(join(home.versions, name, 'keystone.mjs')) ? name : undefined;
  } catch {
    return undefined;
  }
}
