// What the invariants read from the agent's state store beyond the harness's views (history, components, applied
// revision): SQLite's own integrity check, the replay floor and the status outbox. Read-only connections, so the
// store can be read while the agent runs, and a killed agent's store is read as the crash left it (the next agent
// recovers the WAL; a read-only reader sees the same committed state without writing it back).
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { historyFromRow } from '../../src/store/apply-history.js';
import { RowReader, type Row } from '../../src/store/row-reader.js';
import { STATE_DB_FILE, type HistoryEntry } from '../../src/store/state-store.js';

export interface OutboxRow {
  id: number;
  commit: string;
  state: string;
  createdAt: number;
  open: boolean;
  deliveredAt?: number;
  lastError?: string;
}

function withDb<T>(stateDir: string, fn: (db: Sqlite.Database) => T): T {
  const db = new Sqlite(join(stateDir, STATE_DB_FILE), { readonly: true, fileMustExist: true, timeout: 5_000 });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** `PRAGMA integrity_check`: ['ok'] for a sound database, else SQLite's findings. */
export function integrityCheck(stateDir: string): string[] {
  return withDb(stateDir, (db) =>
    (db.prepare('PRAGMA integrity_check').all() as Array<{ integrity_check: string }>).map((r) => r.integrity_check),
  );
}

/** The replay floor (the greatest signing time ever applied, s); undefined before the first signed apply. */
export function replayFloor(stateDir: string): number | undefined {
  return withDb(
    stateDir,
    (db) =>
      (db.prepare('SELECT signed_at FROM replay_floor WHERE slot = 1').get() as { signed_at: number } | undefined)
        ?.signed_at,
  );
}

/** Every status_outbox row of commits in `commits` (all when undefined), oldest first. */
export function outboxRows(stateDir: string, commits?: ReadonlySet<string>): OutboxRow[] {
  const rows = withDb(
    stateDir,
    (db) =>
      db
        .prepare(
          'SELECT id, "commit" AS c, state, created_at, next_attempt_at, delivered_at, last_error FROM status_outbox ORDER BY id',
        )
        .all() as Array<{
        id: number;
        c: string;
        state: string;
        created_at: number;
        next_attempt_at: number | null;
        delivered_at: number | null;
        last_error: string | null;
      }>,
  );
  return rows
    .filter((r) => !commits || commits.has(r.c))
    .map((r) => ({
      id: r.id,
      commit: r.c,
      state: r.state,
      createdAt: r.created_at,
      open: r.next_attempt_at !== null,
      ...(r.delivered_at !== null && { deliveredAt: r.delivered_at }),
      ...(r.last_error !== null && { lastError: r.last_error }),
    }));
}

/** How many rows still wait for delivery. */
export function openOutboxRows(stateDir: string): number {
  return withDb(
    stateDir,
    (db) =>
      (db.prepare('SELECT count(*) AS n FROM status_outbox WHERE next_attempt_at IS NOT NULL').get() as { n: number })
        .n,
  );
}

/** Whether an apply was under way (begun, not finished) when this is read: for a kill, "it landed inside an apply". */
export function applyInProgress(stateDir: string): boolean {
  return withDb(
    stateDir,
    (db) => db.prepare('SELECT 1 FROM applies WHERE finished_at IS NULL LIMIT 1').get() !== undefined,
  );
}

/** The newest `limit` apply history entries, newest first (the harness's history() reads all of them: up to 1,000). */
export function recentHistory(stateDir: string, limit: number): HistoryEntry[] {
  const rows = new RowReader(join(stateDir, STATE_DB_FILE));
  return withDb(stateDir, (db) =>
    (db.prepare('SELECT * FROM applies ORDER BY id DESC LIMIT ?').all(limit) as Row[]).map((r) =>
      historyFromRow(rows, r),
    ),
  );
}

/** Apply history entries with an id above `afterId`, oldest first (what was recorded since an earlier look). */
export function historySince(stateDir: string, afterId: number): HistoryEntry[] {
  const rows = new RowReader(join(stateDir, STATE_DB_FILE));
  return withDb(stateDir, (db) =>
    (db.prepare('SELECT * FROM applies WHERE id > ? ORDER BY id').all(afterId) as Row[]).map((r) =>
      historyFromRow(rows, r),
    ),
  );
}
