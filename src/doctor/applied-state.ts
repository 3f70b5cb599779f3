// What the state store says was applied last, read without touching the state directory: doctor runs beside a live
// agent, takes none of its locks and leaves no file behind.
//
// SQLite cannot open a WAL database read-only without its -wal and -shm files: it creates them (and leaves them
// behind) when they are missing. So: while they exist (an agent has the database open, or died with it open) the
// database is opened read-only in place, which creates nothing and sees what is in the WAL; when they do not, the
// database file alone holds everything, and a copy of it is read in memory instead.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { AppliedRevisionTable, type AppliedRevision } from '../store/applied-revision.js';
import { RowReader } from '../store/row-reader.js';
import { STATE_DB_FILE } from '../state-dir/layout.js';
import { StateStoreError } from '../store/state-store-error.js';
import { sqliteNativeBinding } from '../store/sqlite-addon.js';

export type AppliedState =
  /** No state database: nothing was ever applied here (or --state-dir is not the agent's). */
  | { kind: 'none'; file: string }
  | {
      kind: 'read';
      file: string;
      revision?: AppliedRevision;
      /** The replay floor: the greatest signing time applied (s). */ floor?: number;
    }
  | { kind: 'unreadable'; file: string; message: string; code?: string };

/** Bytes 18 and 19 of a SQLite file: its write and read format, 2 in WAL mode, 1 (rollback journal) otherwise. */
const FORMAT_BYTES = [18, 19] as const;

export function readAppliedState(stateDir: string): AppliedState {
  const file = join(stateDir, STATE_DB_FILE);
  if (!existsSync(file)) return { kind: 'none', file };
  let db: Sqlite.Database | undefined;
  try {
    if (existsSync(`${file}-wal`) && existsSync(`${file}-shm`))
      db = new Sqlite(file, { ...sqliteNativeBinding(), readonly: true, fileMustExist: true, timeout: 1000 });
    else {
      const bytes = readFileSync(file);
      // A copy in memory cannot use a WAL: marked as a rollback-journal database, the same pages read the same.
      if (bytes.length >= 100) for (const i of FORMAT_BYTES) if (bytes[i] === 2) bytes[i] = 1;
      db = new Sqlite(bytes, sqliteNativeBinding());
    }
    const table = new AppliedRevisionTable({
      db,
      read: new RowReader(file),
      now: () => 0,
      transaction: () => {
        throw new StateStoreError('KS_STATE_INVALID', 'doctor reads the state store; it never writes');
      },
    });
    const revision = table.get();
    const floor = table.lastSignedAt();
    return { kind: 'read', file, ...(revision && { revision }), ...(floor !== undefined && { floor }) };
  } catch (e) {
    const err = e as Error & { code?: string };
    return { kind: 'unreadable', file, message: err.message, ...(typeof err.code === 'string' && { code: err.code }) };
  } finally {
    db?.close();
  }
}
