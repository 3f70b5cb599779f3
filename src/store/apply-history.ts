// The apply history (SPEC §5): one entry per apply or rejected revision, written before the apply acts, finished
// after it, and pruned to a retention (unfinished entries never are: they say the agent died during an apply; nor are
// failures, which say a revision failed on this device for good).
import * as v from 'valibot';
import { int, integer, number, object, record } from '../core/valid.js';
import { cutLine } from '../core/line-bound.js';
import { checked, textSchema as text, timeSchema, type Row, type RowReader } from './row-reader.js';
import { StateStoreError } from './state-store-error.js';
import type { TableContext } from './table-context.js';

/** Finished apply entries kept; older ones are pruned as new ones are written (unfinished ones never are). */
export const DEFAULT_HISTORY_RETENTION = 1_000;

/** The reconcile as the history keeps it (a core `Reconcile` may be passed: its other fields are dropped). */
export interface ApplyReconcile {
  stopOrder: string[];
  startOrder: string[];
  noTouch: string[];
  reasons: Record<string, string>;
}

/**
 * `recovered`: every component of a revision whose apply failed became healthy later (a crash restart, the health
 * check passing again, an operator restart): written beside the failure, which it never rewrites (SPEC §5).
 */
export type ApplyOutcome = 'success' | 'failure' | 'rejected' | 'recovered';

export interface ApplyFailure {
  name: string;
  reason: string;
}

export interface HistoryEntry {
  id: number;
  revision: string;
  planFile: string;
  /** The fleet.toml target the plan came from (SPEC §13). */
  target?: string;
  /** ms */
  startedAt: number;
  /** Absent for a revision rejected before it was diffed. */
  reconcile?: ApplyReconcile;
  /** The next three are absent while the apply runs, or when the agent died during it. */
  finishedAt?: number;
  outcome?: ApplyOutcome;
  summary?: string;
  /** Empty unless components failed. */
  failed: ApplyFailure[];
}

const outcomeSchema = v.picklist(['success', 'failure', 'rejected', 'recovered']);
const reconcileSchema: v.GenericSchema<unknown, ApplyReconcile> = object({
  stopOrder: v.array(v.string()),
  startOrder: v.array(v.string()),
  noTouch: v.array(v.string()),
  reasons: record(v.string(), v.string()),
});
const failedSchema: v.GenericSchema<unknown, ApplyFailure[]> = v.array(object({ name: text, reason: v.string() }));
const positive = v.pipe(number(), int(), v.gtValue(0));

const historySchema: v.GenericSchema<unknown, HistoryEntry> = object({
  id: positive,
  revision: v.string(),
  planFile: v.string(),
  target: v.optional(text),
  startedAt: timeSchema,
  reconcile: v.optional(reconcileSchema),
  finishedAt: v.optional(timeSchema),
  outcome: v.optional(outcomeSchema),
  summary: v.optional(v.string()),
  failed: failedSchema,
});

// What is written is held to one line's bound (a reason may quote a component's output): never megabytes per row.
const keptText = v.pipe(
  v.string(),
  v.transform((t) => cutLine(t)),
);
const applyStartSchema = object({
  revision: v.string(),
  planFile: v.string(),
  target: v.optional(text),
  startedAt: timeSchema,
  reconcile: reconcileSchema,
});
const applyFinishSchema = object({
  finishedAt: timeSchema,
  outcome: outcomeSchema,
  summary: keptText,
  failed: v.optional(v.array(object({ name: text, reason: keptText }))),
});
const rejectedSchema = object({
  revision: v.string(),
  planFile: v.string(),
  target: v.optional(text),
  at: timeSchema,
  reason: keptText,
});
const recoveredSchema = object({
  revision: v.string(),
  planFile: v.string(),
  target: v.optional(text),
  at: timeSchema,
  summary: keptText,
});
const historyQuerySchema = object({ limit: positive, before: v.optional(integer()) });

/** An applies row as an entry, or KS_STATE_CORRUPT naming the row and the column. */
export function historyFromRow(read: RowReader, row: Row): HistoryEntry {
  const what = `applies row ${String(row.id)}`;
  return read.decode(historySchema, what, {
    id: row.id,
    revision: row.revision,
    planFile: row.plan_file,
    target: row.target ?? undefined,
    startedAt: row.started_at,
    reconcile: read.json(row, 'reconcile', what),
    finishedAt: row.finished_at ?? undefined,
    outcome: row.outcome ?? undefined,
    summary: row.summary ?? undefined,
    failed: read.json(row, 'failed', what) ?? [],
  });
}

/** The applies table. */
export class ApplyHistory {
  private readonly s;

  constructor(
    private readonly ctx: TableContext,
    retention: number,
  ) {
    const p = (sql: string) => ctx.db.prepare(sql);
    this.s = {
      begin: p(
        'INSERT INTO applies (revision, plan_file, target, started_at, reconcile) VALUES (?, ?, ?, ?, ?) RETURNING id',
      ).pluck(),
      finish: p(`UPDATE applies SET finished_at = @finishedAt, outcome = @outcome, summary = @summary, failed = @failed
                 WHERE id = @id AND finished_at IS NULL`),
      rejected: p(`INSERT INTO applies (revision, plan_file, target, started_at, finished_at, outcome, summary)
                   VALUES (?, ?, ?, ?, ?, 'rejected', ?) RETURNING id`).pluck(),
      recovered: p(`INSERT INTO applies (revision, plan_file, target, started_at, finished_at, outcome, summary)
                    VALUES (?, ?, ?, ?, ?, 'recovered', ?) RETURNING id`).pluck(),
      // A failure the device saw is kept past the retention (SPEC §5: a commit that failed here stays failed, however
      // many revisions come after): a row per failed signed commit, which only signers can make.
      prune: p(`DELETE FROM applies WHERE finished_at IS NOT NULL
                  AND NOT (outcome = 'failure' AND summary NOT LIKE 'interrupted%')
                  AND id NOT IN (SELECT id FROM applies ORDER BY id DESC LIMIT ${retention})`),
      of: p('SELECT * FROM applies WHERE revision = ? ORDER BY id DESC LIMIT ?'),
      history: p('SELECT * FROM applies WHERE id < ? ORDER BY id DESC LIMIT ?'),
      unfinished: p('SELECT * FROM applies WHERE finished_at IS NULL ORDER BY id DESC LIMIT 1'),
    };
  }

  begin(a: {
    revision: string;
    planFile: string;
    target?: string;
    startedAt: number;
    reconcile: ApplyReconcile;
  }): number {
    const v = checked(applyStartSchema, a, 'apply');
    return this.ctx.transaction(() => {
      const id = this.s.begin.get(
        v.revision,
        v.planFile,
        v.target ?? null,
        v.startedAt,
        JSON.stringify(v.reconcile),
      ) as number;
      this.s.prune.run();
      return id;
    });
  }

  finish(id: number, f: { finishedAt: number; outcome: ApplyOutcome; summary: string; failed?: ApplyFailure[] }): void {
    const v = checked(applyFinishSchema, f, `finish of apply ${id}`);
    const failed = v.failed?.length ? JSON.stringify(v.failed) : null;
    if (
      this.s.finish.run({ id, finishedAt: v.finishedAt, outcome: v.outcome, summary: v.summary, failed }).changes === 0
    )
      throw new StateStoreError('KS_STATE_NOT_FOUND', `apply ${id} does not exist or is already finished`);
  }

  recordRejected(r: { revision: string; planFile: string; target?: string; at: number; reason: string }): number {
    const v = checked(rejectedSchema, r, 'rejected revision');
    return this.ctx.transaction(() => {
      const id = this.s.rejected.get(v.revision, v.planFile, v.target ?? null, v.at, v.at, v.reason) as number;
      this.s.prune.run();
      return id;
    });
  }

  recordRecovered(r: { revision: string; planFile: string; target?: string; at: number; summary: string }): number {
    const v = checked(recoveredSchema, r, 'recovery');
    return this.ctx.transaction(() => {
      const id = this.s.recovered.get(v.revision, v.planFile, v.target ?? null, v.at, v.at, v.summary) as number;
      this.s.prune.run();
      return id;
    });
  }

  history(q: { limit: number; before?: number }): HistoryEntry[] {
    const v = checked(historyQuerySchema, q, 'history query');
    const rows = this.s.history.all(v.before ?? Number.MAX_SAFE_INTEGER, v.limit) as Row[];
    return rows.map((row) => historyFromRow(this.ctx.read, row));
  }

  /** One revision's entries, newest first, whatever came after them. */
  historyOf(revision: string, limit: number): HistoryEntry[] {
    const rows = this.s.of.all(revision, limit) as Row[];
    return rows.map((row) => historyFromRow(this.ctx.read, row));
  }

  unfinished(): HistoryEntry | undefined {
    const row = this.s.unfinished.get() as Row | undefined;
    return row && historyFromRow(this.ctx.read, row);
  }
}
