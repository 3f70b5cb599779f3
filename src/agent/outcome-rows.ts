// The rows, events and remembered failures Outcomes (outcomes.ts) writes, computed from a revision and a result: pure
// values (and one read). Apart so the one writer of outcomes keeps its rules and its writes, and nothing else.
import { isCommitId } from '../git/commit-id.js';
import type { ApplyFailure, AppliedRevision, HistoryEntry, StateStore } from '../store/state-store.js';
import type { ApplyResult } from './engine.js';
import type { RevisionInfo } from './engine-types.js';
import { rowsOf } from './outcome-reads.js';
import type { ApplyReconcile, ApplyTicket, RejectedRevision, StandingFailure } from './outcome-types.js';

type Place = Pick<RevisionInfo, 'id' | 'target' | 'wave'>;

/** `r` with its summary and every failure's reason cleaned of secret values (a component's output may quote one). */
export function scrubbedResult<T extends ApplyResult>(r: T, scrub: ((text: string) => string) | undefined): T {
  if (!scrub) return r;
  const clean = (fs: ApplyResult['failures']) => fs.map((f) => ({ ...f, reason: scrub(f.reason) }));
  return {
    ...r,
    summary: scrub(r.summary),
    failures: clean(r.failures),
    published: r.published.map((f) => ({ ...f, reason: scrub(f.reason) })),
  };
}

/** The applied revision as an apply of `rev` begins. */
export function appliedRevisionRow(rev: RevisionInfo, appliedAt: number): AppliedRevision {
  return {
    id: rev.id,
    source: rev.source,
    planFile: rev.planFile,
    ...(rev.target !== undefined && { target: rev.target }),
    ...(rev.identity !== undefined && { identity: rev.identity }),
    unsigned: rev.unsigned,
    appliedAt,
    ...(rev.signedAt !== undefined && { signedAt: rev.signedAt }),
    ...(rev.signers !== undefined && { signers: rev.signers }),
    ...(rev.wave !== undefined && { wave: rev.wave }),
  };
}

/** The `applying` event (and `pending` report) of an apply of `rev`. */
export function applyingEvent(rev: Place, reconcile: ApplyReconcile) {
  return {
    revision: rev.id,
    reconcile,
    ...(rev.target !== undefined && { target: rev.target }),
    ...(rev.wave !== undefined && { wave: rev.wave }),
  };
}

/** The `revision` event (and the report) of an outcome of `rev`: `body` between its revision and its place. */
export function revisionEvent<B extends object>(rev: Place, body: B) {
  return {
    revision: rev.id,
    ...body,
    ...(rev.target !== undefined && { target: rev.target }),
    ...(rev.wave !== undefined && { wave: rev.wave }),
  };
}

/** `rev` failed, `failed` saying what: remembered until a recovery is recorded (rule 5). */
export function standingFailureOf(rev: RevisionInfo, failed: ApplyFailure[]): StandingFailure {
  return {
    revision: rev.id,
    planFile: rev.planFile,
    ...(rev.target !== undefined && { target: rev.target }),
    failed: failed.map((f) => f.name),
  };
}

/** The history row of an apply of `rev` as it begins. */
export function applyRow(rev: RevisionInfo, startedAt: number, reconcile: ApplyReconcile) {
  return {
    revision: rev.id,
    planFile: rev.planFile,
    ...(rev.target !== undefined && { target: rev.target }),
    startedAt,
    reconcile,
  };
}

/** What closes the apply the agent died during (rule 4): `next` says what became of `revision`, which came after it. */
export function interruptedEnd(finishedAt: number, revision: string, next: string) {
  return {
    finishedAt,
    outcome: 'failure' as const,
    summary: `interrupted: the agent stopped during this apply, and ${short(revision)} ${next}`,
  };
}

/** The open apply of a ticket whose apply threw or was cut short: the same revision's next apply finishes it. */
export function openEntryOf(t: ApplyTicket): HistoryEntry {
  return {
    id: t.historyId,
    revision: t.rev.id,
    planFile: t.rev.planFile,
    startedAt: t.began,
    failed: [],
  };
}

/** The `revision` event (and the report) of a refusal. */
export function rejectedEvent(r: RejectedRevision, durationMs: number) {
  return {
    revision: r.revision,
    outcome: 'rejected' as const,
    durationMs,
    summary: r.reason,
    ...(r.target !== undefined && { target: r.target }),
    ...(r.wave !== undefined && { wave: r.wave }),
  };
}

/** The history row of a refusal. */
export function rejectedRow(r: RejectedRevision, at: number) {
  return {
    revision: r.revision,
    planFile: r.planFile,
    ...(r.target !== undefined && { target: r.target }),
    at,
    reason: r.reason,
  };
}

/** The summary of a recovery (rule 5): never a rewrite of the failure. */
export function recoverySummary(f: StandingFailure): string {
  return `recovered: every component runs healthy again after the failed apply${f.failed.length ? ` (${f.failed.join(', ')})` : ''}; the apply's outcome stays failure`;
}

/** The history row of a recovery. */
export function recoveredRow(f: StandingFailure, at: number, summary: string) {
  return {
    revision: f.revision,
    planFile: f.planFile,
    ...(f.target !== undefined && { target: f.target }),
    at,
    summary,
  };
}

/**
 * The report of an outcome: the failures as published (scrubbed of the values given; the row and the event keep them
 * whole), what the device does about them, the components the revision asked for.
 */
export function finishedReport<E extends object>(
  event: E,
  r: Pick<ApplyResult, 'published' | 'desired'>,
  then: string | undefined,
) {
  return {
    ...event,
    failed: r.published,
    ...(then !== undefined && { then }),
    ...(r.desired && { components: r.desired.components }),
  };
}

/** The last row of `revision` that is an outcome (not a refusal, not an open apply). */
export function lastOutcomeOf(store: StateStore, revision: string) {
  return rowsOf(store, revision).find(
    (e) => e.outcome === 'failure' || e.outcome === 'recovered' || e.outcome === 'success',
  );
}

const short = (id: string) => (isCommitId(id) ? id.slice(0, 12) : id);
