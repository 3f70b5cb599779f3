// The one error type of the state store, with its stable codes: the agent, the CLI and tests branch on them.
import { CodedError } from '../core/errors.js';

/** Every code the state store throws. Stable: the agent and tests branch on them. */
export type StateStoreCode =
  /** A row read back does not have the shape it was written with (or the file is no database). */
  | 'KS_STATE_CORRUPT'
  /** A write was refused before it reached the database: the value breaks the store's contract. */
  | 'KS_STATE_INVALID'
  /** A named write addressed a component or apply that has no row (or an apply already finished). */
  | 'KS_STATE_NOT_FOUND'
  /** The database was migrated by a newer agent: reading it with this one could lose data. */
  | 'KS_STATE_SCHEMA_TOO_NEW'
  /** The state directory or database cannot be opened or set up as the store needs. */
  | 'KS_STATE_OPEN_FAILED'
  /** Opened for exclusive use (offline maintenance) while another connection, such as a running agent, has it open. */
  | 'KS_STATE_BUSY'
  /**
   * A write found the state directory's file system full (SQLITE_FULL). Nothing of it was written (the statement or
   * transaction rolled back, the database is intact); the same write succeeds once space is freed.
   */
  | 'KS_STATE_DISK_FULL';

export class StateStoreError extends CodedError<StateStoreCode, object> {
  constructor(code: StateStoreCode, message: string, options?: { cause?: unknown }) {
    super(code, message, {}, options);
    this.name = 'StateStoreError';
  }
}

/**
 * SQLite's SQLITE_FULL as KS_STATE_DISK_FULL, naming the file and the fix; any other error unchanged. (SQLite reports
 * ENOSPC and EDQUOT from its writes as SQLITE_FULL, and rolls the statement or transaction back.)
 */
export function writeFailure(e: unknown, file: string): unknown {
  if ((e as { code?: unknown } | null)?.code !== 'SQLITE_FULL') return e;
  return new StateStoreError(
    'KS_STATE_DISK_FULL',
    `${file}: the state store cannot write, the file system is full: free space there (nothing was half-written)`,
    { cause: e },
  );
}
