// Opening the store's one SQLite connection safely: a 0600 file in a directory no other user can change, WAL with
// synchronous=FULL so a call is durable when it returns, migrated, and either shared (waiting on a busy lock) or
// held alone for offline repairs.
import { closeSync, constants as fsConstants, existsSync, fsyncSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { STATE_DB_FILE } from '../state-dir/layout.js';
import { checkOwnFileIfPresent, chownSpec, safeDirectory, StateDirError } from '../state-dir/safe-path.js';
import { migrate } from './migrations.js';
import { StateStoreError } from './state-store-error.js';
import { sqliteNativeBinding } from './sqlite-addon.js';

export { STATE_DB_FILE };
/** How long a write waits for another connection's lock before it fails with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5_000;

/** Opens (creating and migrating as needed) `<stateDir>/state.db`; `exclusive` fails with KS_STATE_BUSY while another connection has it. */
export function openStateDatabase(
  stateDir: string,
  opts: { now: () => number; exclusive?: boolean; nativeBinding?: string },
): { db: Sqlite.Database; file: string } {
  const file = join(stateDir, STATE_DB_FILE);
  const created = prepareFile(stateDir, file);
  let db: Sqlite.Database | undefined;
  try {
    // Exclusive: another connection holds its lock for as long as it is open, so waiting for it is pointless.
    const timeout = opts.exclusive ? 0 : BUSY_TIMEOUT_MS;
    db = new Sqlite(file, {
      ...(opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : sqliteNativeBinding()),
      timeout,
    });
    db.pragma(`busy_timeout = ${timeout}`);
    if (opts.exclusive) {
      // Before the first access, so SQLite keeps the WAL index in private memory; the empty transaction takes the lock.
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE; COMMIT');
    }
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal')
      throw new StateStoreError(
        'KS_STATE_OPEN_FAILED',
        `${file}: the file system refused WAL mode (journal_mode is ${String(mode)})`,
      );
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db, opts.now());
  } catch (e) {
    db?.close();
    if (e instanceof StateStoreError) throw e;
    const code = e instanceof Sqlite.SqliteError ? e.code : undefined;
    if (code === 'SQLITE_BUSY')
      throw new StateStoreError(
        'KS_STATE_BUSY',
        `${file} is in use by another process (a running keystone agent?): stop it first`,
        { cause: e },
      );
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT')
      throw new StateStoreError(
        'KS_STATE_CORRUPT',
        `${file}: not a usable SQLite database (${(e as Error).message}); move it aside to start from empty state`,
        { cause: e },
      );
    throw new StateStoreError(
      'KS_STATE_OPEN_FAILED',
      `${file}: cannot open the state database: ${(e as Error).message}`,
      { cause: e },
    );
  }
  // A new file's directory entry must survive a power cut too (SQLite syncs the directory for its WAL itself).
  if (created) syncDirectory(stateDir);
  return { db, file };
}

/** The directory (0700 when created) and an empty 0600 database file; true when the file is new. */
function prepareFile(stateDir: string, file: string): boolean {
  const failed = (e: unknown) =>
    new StateStoreError('KS_STATE_OPEN_FAILED', `state directory ${stateDir}: ${(e as Error).message}`, { cause: e });
  if (existsSync(stateDir) && !statSync(stateDir).isDirectory()) throw failed(new Error('not a directory'));
  try {
    // Reached without following a link, through directories no other user can change (KS_STATE_DIR_UNSAFE).
    safeDirectory(stateDir, { mode: 0o700 });
  } catch (e) {
    if (e instanceof StateDirError) throw e;
    throw failed(e);
  }
  let created: boolean;
  try {
    // O_EXCL: the first opener creates it with our mode; SQLite gives -wal and -shm the same mode.
    closeSync(
      openSync(file, fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW, 0o600),
    );
    created = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw failed(e);
    created = false;
  }
  // SQLite opens these by name and follows links: each must be the agent's own file, writable by no one else.
  for (const f of [file, `${file}-wal`, `${file}-shm`])
    checkOwnFileIfPresent(
      f,
      `move it aside if you did not put it there, else chown ${chownSpec()} ${f} && chmod 600 ${f}`,
    );
  return created;
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
