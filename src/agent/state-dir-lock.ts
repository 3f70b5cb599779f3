// One agent per state directory: two would adopt the same components and apply different plans to them.
//
// The lock is SQLite's on `<state-dir>/agent.lock`: a connection in exclusive locking mode with an exclusive
// transaction held for the agent's lifetime. SQLite's locks are POSIX locks, which the kernel drops when the holder
// dies however it dies (kill -9 included), so a lock file never outlives its agent; SQLite also sees a conflict
// between two connections of one process, where plain POSIX locks would not. The holder's pid is in `agent.pid`,
// only to name it: the lock, not that file, decides.
import { closeSync, constants, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { OperationError } from '../core/errors.js';
import { LOCK_FILE, PID_FILE } from '../state-dir/layout.js';
import { checkOwnFileIfPresent, readOwnFile, StateDirError } from '../state-dir/safe-path.js';
import { sqliteNativeBinding } from '../store/sqlite-addon.js';

export { LOCK_FILE, PID_FILE };

export interface StateDirLock {
  readonly stateDir: string;
  /** Idempotent. */
  release(): void;
}

/**
 * Takes the state directory's lock, or throws StateDirError KS_STATE_DIR_LOCKED naming the holder's pid. The
 * directory itself must have been checked (checkStateDir): the lock file is opened by name in it.
 */
export function lockStateDir(stateDir: string, pid: number = process.pid): StateDirLock {
  const path = join(stateDir, LOCK_FILE);
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  checkOwnFileIfPresent(path);
  // timeout 0: a held lock is an answer now, not something to wait for.
  const db = new Sqlite(path, { ...sqliteNativeBinding(), timeout: 0 });
  try {
    // The journal in memory: the transaction writes nothing, and no -journal file appears next to the lock.
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (e) {
    db.close();
    if ((e as { code?: string }).code !== 'SQLITE_BUSY')
      throw new OperationError(
        'KS_STATE_OPEN_FAILED',
        `${path}: cannot take the state directory's lock: ${(e as Error).message}`,
      );
    const holder = readPid(stateDir);
    const who = holder === undefined ? 'another agent' : `another agent (pid ${holder})`;
    throw new StateDirError(
      'KS_STATE_DIR_LOCKED',
      `${who} is using the state directory ${stateDir}: stop it first, or give this agent its own --state-dir`,
      { path, ...(holder !== undefined && { pid: holder }) },
    );
  }
  writePid(stateDir, pid);
  let held = true;
  return {
    stateDir,
    release() {
      if (!held) return;
      held = false;
      // The pid file goes first, while the lock still says it is ours to remove.
      if (readPid(stateDir) === pid) rmSync(join(stateDir, PID_FILE), { force: true });
      db.close();
    },
  };
}

/** The pid in `agent.pid`, if it is a file of the agent's user holding one. */
export function readPid(stateDir: string): number | undefined {
  const text = readOwnFile(join(stateDir, PID_FILE))?.trim();
  return text !== undefined && /^\d{1,10}$/.test(text) ? Number(text) : undefined;
}

/** Whole or not at all: a temporary file renamed over the name (rename replaces a link, never follows it). */
function writePid(stateDir: string, pid: number): void {
  const tmp = join(stateDir, `.${PID_FILE}.${pid}`);
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    writeSync(fd, `${pid}\n`);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, join(stateDir, PID_FILE));
}
