// A status as the outbox's rows hold it and back: one row per reporter written (outboxRows), and the status a row is
// delivered as (statusOfRow). Pure mappings, apart from status-outbox.ts, which decides when the store is written.
import type { OutboxEntry, OutboxInput } from '../store/state-store.js';
import type { CommitStatus } from './commit-status.js';

/** The rows of `status`, one per reporter, as enqueued: copies, so that the caller's status may change after. */
export function outboxRows(status: CommitStatus, reporters: readonly string[]): OutboxInput[] {
  return reporters.map((reporter) => ({
    reporter,
    commit: status.commit,
    state: status.state,
    description: status.description,
    context: status.context,
    ...(status.targetUrl !== undefined && { targetUrl: status.targetUrl }),
    ...(status.fields !== undefined && Object.keys(status.fields).length > 0 && { fields: { ...status.fields } }),
    ...(status.rollout !== undefined && { rollout: { ...status.rollout, keep: [...status.rollout.keep] } }),
    ...(status.details !== undefined && { details: status.details }),
    createdAt: status.at,
  }));
}

/** The status a row is delivered as: its seq is the row's id, its time the one it was enqueued with. */
export function statusOfRow(entry: OutboxEntry): CommitStatus {
  return {
    commit: entry.commit,
    state: entry.state,
    description: entry.description,
    context: entry.context,
    ...(entry.targetUrl !== undefined && { targetUrl: entry.targetUrl }),
    ...(entry.fields !== undefined && { fields: entry.fields }),
    ...(entry.rollout !== undefined && { rollout: entry.rollout }),
    // A row enqueued before details existed (an upgrade) has none: it goes as it was decided.
    ...(entry.details !== undefined && { details: entry.details }),
    seq: entry.id,
    at: entry.createdAt,
  };
}
