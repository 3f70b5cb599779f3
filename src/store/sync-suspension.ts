// The sync suspension: an operator's forced manual apply holds the Git sync until `keystonectl resume`, and an
// agent restart must not quietly resume it, so it is kept on disk.
import { StateStoreError } from './state-store-error.js';
import type { TableContext } from './table-context.js';

export interface SyncSuspension {
  /** ms */
  since: number;
  /** The manual revision that suspended it. */
  revision: string;
  reason: string;
}

/** The sync_suspension table, one row while suspended. */
export class SyncSuspensionTable {
  private readonly s;

  constructor(private readonly ctx: TableContext) {
    const p = (sql: string) => ctx.db.prepare(sql);
    this.s = {
      suspension: p('SELECT since, revision, reason FROM sync_suspension WHERE slot = 1'),
      suspend: p(
        'INSERT OR REPLACE INTO sync_suspension (slot, since, revision, reason) VALUES (1, @since, @revision, @reason)',
      ),
      resume: p('DELETE FROM sync_suspension'),
    };
  }

  get(): SyncSuspension | undefined {
    const row = this.s.suspension.get() as { since: unknown; revision: unknown; reason: unknown } | undefined;
    if (!row) return undefined;
    if (!Number.isSafeInteger(row.since) || typeof row.revision !== 'string' || typeof row.reason !== 'string')
      throw this.ctx.read.corrupt('sync_suspension row', 'expected since (integer), revision and reason (text)');
    return { since: row.since as number, revision: row.revision, reason: row.reason };
  }

  set(s: SyncSuspension | undefined): void {
    if (s === undefined) this.s.resume.run();
    else {
      if (!Number.isSafeInteger(s.since) || s.revision === '' || s.reason === '')
        throw new StateStoreError('KS_STATE_INVALID', 'a sync suspension needs since, revision and reason');
      this.s.suspend.run(s);
    }
  }
}
