// The status_outbox table (SPEC §5, §8): a status is written here, one row per reporter, before any delivery is
// tried; a row is open until delivered or given up, and finished rows are pruned to a retention.
import type Sqlite from 'better-sqlite3';
import * as v from 'valibot';
import { describeIssues, int, minLength, number, object, record, safeParse } from '../core/valid.js';
import type { ReportDetails } from '../core/commit-report.js';
import { COMMIT_ID } from '../git/commit-id.js';
import { checked, orNull, timeSchema, type Row } from './row-reader.js';
import type { TableContext } from './table-context.js';

/** A status waiting for (or done with) one reporter: one `status_outbox` row (SPEC §5, §8). */
export interface OutboxEntry {
  id: number;
  reporter: string;
  commit: string;
  state: 'pending' | 'success' | 'failure' | 'error';
  description: string;
  context: string;
  targetUrl?: string;
  /** The status's fields (target, wave). */
  fields?: Record<string, string>;
  /** The status's rollout ref (SPEC §14). */
  rollout?: { wave: string; state: 'held' | 'applying' | 'success' | 'failure' | 'error' | 'halted'; keep: string[] };
  /** What the status says beside its state (agent version, health, a failure's log lines; SPEC §8). */
  details?: ReportDetails;
  /** ms */
  createdAt: number;
  attempts: number;
  /** ms; set exactly while the entry is open (not yet delivered nor given up). */
  nextAttemptAt?: number;
  lastError?: string;
  /** ms */
  deliveredAt?: number;
}

export type OutboxInput = Pick<
  OutboxEntry,
  | 'reporter'
  | 'commit'
  | 'state'
  | 'description'
  | 'context'
  | 'targetUrl'
  | 'fields'
  | 'rollout'
  | 'details'
  | 'createdAt'
>;

export interface OutboxCounts {
  /** Still to be delivered. */
  open: number;
  delivered: number;
  /** Given up after a permanent failure (kept, with last_error, until pruned). */
  failed: number;
}

const outboxStateSchema = v.picklist(['pending', 'success', 'failure', 'error']);
/** Finite numbers (valid.ts): no NaN or Infinity reaches a note. */
const finite = v.optional(number());
const detailsSchema = object({
  agent: v.optional(v.string()),
  health: v.optional(
    object({ uptimeS: finite, load1: finite, memFreeBytes: finite, diskFreeBytes: finite, tempC: finite }),
  ),
  log: v.optional(v.array(v.string())),
});
const nonEmpty = v.pipe(v.string(), minLength(1));
const count = v.pipe(number(), int(), v.minValue(0));
const outboxInputSchema = object({
  reporter: nonEmpty,
  commit: v.pipe(v.string(), v.regex(COMMIT_ID, 'must be 40 lowercase hex')),
  state: outboxStateSchema,
  description: v.string(),
  context: nonEmpty,
  targetUrl: v.optional(nonEmpty),
  fields: v.optional(record(v.string(), v.string())),
  rollout: v.optional(
    object({
      wave: nonEmpty,
      state: v.picklist(['held', 'applying', 'success', 'failure', 'error', 'halted']),
      keep: v.array(v.pipe(v.string(), v.regex(COMMIT_ID))),
    }),
  ),
  details: v.optional(detailsSchema),
  createdAt: timeSchema,
});
const outboxEntrySchema = object({
  ...outboxInputSchema.entries,
  id: v.pipe(number(), int(), v.gtValue(0)),
  attempts: count,
  nextAttemptAt: v.optional(timeSchema),
  lastError: v.optional(v.string()),
  deliveredAt: v.optional(timeSchema),
});
const outboxRetrySchema = object({ attempts: count, nextAttemptAt: timeSchema, lastError: v.string() });
const outboxGiveUpSchema = object({ attempts: count, lastError: nonEmpty });

const OUTBOX_COLUMNS =
  'id, reporter, "commit", state, description, context, target_url, fields, rollout, details, created_at, attempts, next_attempt_at, last_error, delivered_at';

function prepareOutbox(db: Sqlite.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    insert:
      p(`INSERT INTO status_outbox (reporter, "commit", state, description, context, target_url, fields, rollout, details, created_at, next_attempt_at)
               VALUES (@reporter, @commit, @state, @description, @context, @targetUrl, @fields, @rollout, @details, @createdAt, @createdAt) RETURNING id`).pluck(),
    heads: p(`SELECT ${OUTBOX_COLUMNS} FROM status_outbox o WHERE next_attempt_at IS NOT NULL
                AND id = (SELECT min(id) FROM status_outbox h WHERE h.reporter = o.reporter AND h."commit" = o."commit" AND h.next_attempt_at IS NOT NULL)
              ORDER BY id`),
    entries: p(`SELECT ${OUTBOX_COLUMNS} FROM status_outbox ORDER BY id DESC LIMIT ?`),
    entry: p(`SELECT ${OUTBOX_COLUMNS} FROM status_outbox WHERE id = ?`),
    delivered: p(
      'UPDATE status_outbox SET delivered_at = ?, next_attempt_at = NULL, attempts = attempts + 1 WHERE id = ? AND next_attempt_at IS NOT NULL',
    ),
    retry: p(`UPDATE status_outbox SET attempts = @attempts, next_attempt_at = @nextAttemptAt, last_error = @lastError
              WHERE id = @id AND next_attempt_at IS NOT NULL`),
    giveUp: p(`UPDATE status_outbox SET attempts = @attempts, next_attempt_at = NULL, last_error = @lastError
               WHERE id = @id AND next_attempt_at IS NOT NULL`),
    prune: p(`DELETE FROM status_outbox WHERE next_attempt_at IS NULL
                AND id NOT IN (SELECT id FROM status_outbox WHERE next_attempt_at IS NULL ORDER BY id DESC LIMIT ?)`),
    counts: p(`SELECT sum(next_attempt_at IS NOT NULL) AS open, sum(delivered_at IS NOT NULL) AS delivered,
                      sum(next_attempt_at IS NULL AND delivered_at IS NULL) AS failed FROM status_outbox`),
  };
}

/** The status_outbox table; its statements are prepared on first use. */
export class StatusOutboxTable {
  private statements?: ReturnType<typeof prepareOutbox>;

  constructor(private readonly ctx: TableContext) {}

  private get o(): ReturnType<typeof prepareOutbox> {
    this.statements ??= prepareOutbox(this.ctx.db);
    return this.statements;
  }

  enqueue(entries: OutboxInput[]): number[] {
    const rows = entries.map((e, i) => checked(outboxInputSchema, e, `outbox entry #${i}`));
    return this.ctx.transaction(() =>
      rows.map(
        (r) =>
          this.o.insert.get({
            ...r,
            targetUrl: orNull(r.targetUrl),
            fields: r.fields ? JSON.stringify(r.fields) : null,
            rollout: r.rollout ? JSON.stringify(r.rollout) : null,
            details: r.details ? JSON.stringify(r.details) : null,
          }) as number,
      ),
    );
  }

  heads(): OutboxEntry[] {
    return (this.o.heads.all() as Row[]).map((row) => this.outboxRow(row));
  }

  entries(q: { limit: number }): OutboxEntry[] {
    const limit = checked(v.pipe(number(), int(), v.gtValue(0)), q.limit, 'outbox limit');
    return (this.o.entries.all(limit) as Row[]).map((row) => this.outboxRow(row));
  }

  entry(id: number): OutboxEntry | undefined {
    const row = this.o.entry.get(id) as Row | undefined;
    return row && this.outboxRow(row);
  }

  markDelivered(id: number, at: number): boolean {
    checked(timeSchema, at, 'delivered time');
    return this.o.delivered.run(at, id).changes > 0;
  }

  retry(id: number, r: { attempts: number; nextAttemptAt: number; lastError: string }): boolean {
    const v = checked(outboxRetrySchema, r, `retry of outbox entry ${id}`);
    return this.o.retry.run({ id, ...v }).changes > 0;
  }

  giveUp(id: number, r: { attempts: number; lastError: string }): boolean {
    const v = checked(outboxGiveUpSchema, r, `give-up of outbox entry ${id}`);
    return this.o.giveUp.run({ id, ...v }).changes > 0;
  }

  prune(keep: number): number {
    const n = checked(count, keep, 'outbox retention');
    return this.o.prune.run(n).changes;
  }

  counts(): OutboxCounts {
    const row = this.o.counts.get() as { open: number | null; delivered: number | null; failed: number | null };
    return { open: row.open ?? 0, delivered: row.delivered ?? 0, failed: row.failed ?? 0 };
  }

  private outboxRow(row: Row): OutboxEntry {
    const value = Object.fromEntries(
      Object.entries({
        id: row.id,
        reporter: row.reporter,
        commit: row.commit,
        state: row.state,
        description: row.description,
        context: row.context,
        targetUrl: row.target_url,
        fields: typeof row.fields === 'string' ? parseFields(row.fields) : undefined,
        rollout: typeof row.rollout === 'string' ? parseFields(row.rollout) : undefined,
        details: typeof row.details === 'string' ? parseDetails(row.details) : undefined,
        createdAt: row.created_at,
        attempts: row.attempts,
        nextAttemptAt: row.next_attempt_at,
        lastError: row.last_error,
        deliveredAt: row.delivered_at,
      }).filter(([, v]) => v !== null && v !== undefined),
    );
    const r = safeParse(outboxEntrySchema, value);
    if (!r.success) throw this.ctx.read.corrupt(`status_outbox row ${String(row.id)}`, describeIssues(r.issues, ''));
    return r.data as OutboxEntry;
  }
}

/** A row's fields column; text that is not a JSON object of strings fails the row's schema check (corrupt). */
function parseFields(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * A row's details column. Unlike the other columns, details that do not parse are dropped, not a corrupt row: they
 * are what a status says beside its state, and the state must still be delivered (nor may the row hold up every
 * row after it). Keys a newer agent added are dropped the same way (the schema keeps what it knows).
 */
function parseDetails(text: string): ReportDetails | undefined {
  const r = safeParse(detailsSchema, parseFields(text));
  return r.success ? (r.data as ReportDetails) : undefined;
}
