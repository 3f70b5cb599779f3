// What the store's facade hands each table module: the one connection, the row reader, the clock, and its
// transaction (which also drops the facade's read cache when it rolls back).
import type Sqlite from 'better-sqlite3';
import type { RowReader } from './row-reader.js';

export interface TableContext {
  db: Sqlite.Database;
  read: RowReader;
  /** ms */
  now: () => number;
  /** One IMMEDIATE transaction (a savepoint when nested); `fn` must be synchronous. */
  transaction<T>(fn: () => T): T;
}
