// The one writer of outcomes (SPEC §5, §8): where what became of a revision turns into history rows, the applied
// revision, events and commit reports. Nothing else writes an apply's row, emits `revision`, `resumed`, `recovered`,
// `applying` or `held`, or hands a report to the outbox.
//
// Invariants ("outcomes are the truth, across restarts"; the chaos run checks them after every settled restart, and
// test/agent/outcomes-*.e2e.test.ts pins each path):
//  1. Rows and reports go together: an outcome's history row and its report are written in one transaction, so a
//     kill between them leaves neither or both.
//  2. A commit that failed on this device is never reported `success` afterwards. A failed commit offered again is not
//     applied again (standing() says `failed-before`), not even as a rollback's target, unless it is what runs (then
//     it is resumed, below); only a new commit changes what the device says about it — or a new desired state from
//     the same commit (the device's name, labels or --plan changed), which is a new attempt by design. Failures are
//     never pruned from the history (store/apply-history.ts), so no amount of later history hides one.
//  3. An agent restart re-reports nothing: the revision the device runs, offered again, is resumed — loaded, adopted
//     instances health-checked, what stopped meanwhile started — and its outcome stands as it was written.
//  4. An apply cut short (kill -9, a stop during it) is not an outcome: its row stays open and is reported by nobody;
//     the same revision, applied next, finishes that row with the true result. Another revision first closes it as
//     `failure` (summary `interrupted: …`), with no report.
//  5. A recovery (every component of a failed revision healthy again: by itself, after a crash restart, an operator
//     action, or the health check after a restart) is its own row, `recovered`, and its own event. It is never
//     reported to the Git host and never rewrites the failure, so no rollout gate counts it.
//  6. A success is written only for an apply whose components were all healthy when it ended (engine.ts step 7).
import type { Logger } from '../log/logger.js';
import type { HistoryEntry } from '../store/state-store.js';
import type { AgentEventMap } from './agent-events.js';
import type { OutcomeReports } from './commit-reporting.js';
import { crashPoint } from './crash-point.js';
import type { ApplyResult } from './engine.js';
import type { RevisionInfo } from './engine-types.js';
import { askFailureListeners, type FailedOutcome, type FailureListener } from './failure-listeners.js';
import type { HeldEvent } from './rollout-holds.js';
import { standingOf, type Standing } from './outcome-reads.js';
import {
  appliedRevisionRow,
  applyingEvent,
  lastOutcomeOf,
  revisionEvent,
  applyRow,
  finishedReport,
  interruptedEnd,
  openEntryOf,
  recoveredRow,
  recoverySummary,
  rejectedEvent,
  rejectedRow,
  scrubbedResult,
  standingFailureOf,
} from './outcome-rows.js';
import type { ApplyReconcile, ApplyTicket, OutcomesDeps, RejectedRevision, StandingFailure } from './outcome-types.js';

export type { Standing } from './outcome-reads.js';

export class Outcomes {
  private reports?: OutcomeReports;
  private readonly failureListeners: Array<FailureListener> = [];
  /** The apply the agent died during, open until its revision (or another) is applied. */
  private interrupted?: HistoryEntry;
  /** The applied revision while its last outcome is a failure nothing has recovered yet. */
  private standingFailure?: StandingFailure;
  /** The last revision and reason `waiting` said (update locks): said again only when either changes. */
  private lastWaiting?: string;
  private readonly log: Logger;
  private readonly supLog: Logger;

  constructor(private readonly deps: OutcomesDeps) {
    this.log = deps.log.child({ module: 'agent' });
    this.supLog = deps.log.child({ module: 'supervisor' });
    // At most one apply is ever open: every begin() closes the one before it.
    this.interrupted = deps.store.unfinishedApply();
    if (this.interrupted)
      this.log.warn(
        { revision: this.interrupted.revision },
        'the previous apply was interrupted: applying that revision again finishes it with its true outcome',
      );
  }

  /** The commit reports (Git notes, GitHub statuses) of a Git-following agent; there is one reporter, the last wins. */
  reportTo(reports: OutcomeReports | undefined): void {
    this.reports = reports;
  }

  /**
   * Asked, before anything is written, about every failure that is reported: what the device does about it (said in
   * the report); what it then does runs once the failure is written (a failure that could not be written is retried,
   * and nothing is done about it meanwhile).
   */
  onFailure(listener: FailureListener): () => void {
    this.failureListeners.push(listener);
    return () => this.failureListeners.splice(this.failureListeners.indexOf(listener), 1);
  }

  /** Rules 2–4: what applying `rev` means now (outcome-reads.ts); `loaded`: the engine carried it out in this run already. */
  standing(
    rev: { id: string; rollback?: boolean; planFile?: string },
    o: { identity: string; loaded: boolean },
  ): Standing {
    return standingOf(this.deps.store, this.interrupted, rev, o);
  }

  /** An apply begins: its row (or the interrupted one it finishes), the applied revision, `pending`. */
  begin(rev: RevisionInfo, reconcile: ApplyReconcile, standing: Standing, silent: boolean, began: number): ApplyTicket {
    const { store, now } = this.deps;
    const e = applyingEvent(rev, reconcile);
    const historyId = store.transaction(() => {
      let id: number;
      if (standing.kind === 'continue') id = standing.historyId;
      else {
        const open = this.interrupted ?? store.unfinishedApply();
        if (open) store.finishApply(open.id, interruptedEnd(now(), rev.id, 'was applied next'));
        id = store.beginApply(applyRow(rev, now(), reconcile));
      }
      this.interrupted = undefined;
      store.setAppliedRevision(appliedRevisionRow(rev, now()));
      // `pending` was said when the interrupted apply began: not again.
      if (!silent && standing.kind !== 'continue') this.reports?.applying(e as never);
      return id;
    });
    this.standingFailure = undefined;
    this.deps.emit('applying', { ...e, reconcile: reconcile as never });
    crashPoint('after-begin-apply');
    return { historyId, rev, began, silent };
  }

  /** An apply that threw after it began: its row stays open, and the same revision's next apply finishes it. */
  abandoned(t: ApplyTicket): void {
    this.interrupted = openEntryOf(t);
  }

  /** Rule 4 and 1: an apply ended; cut short, it stays open. */
  finish(t: ApplyTicket, given: ApplyResult & { stateDigest?: string }): void {
    const { store, now } = this.deps;
    const r = scrubbedResult(given, this.deps.scrub);
    const { rev } = t;
    if (r.interrupted) {
      this.abandoned(t);
      this.log.warn(
        { revision: rev.id },
        'apply interrupted: the agent is stopping; the next start finishes it with its true outcome',
      );
      return;
    }
    crashPoint('before-finish-apply');
    const failed = r.failures;
    // A failure that is the agent update's, not a component's (SPEC §17): nothing to roll back, nothing to recover.
    const agentOnly = r.outcome === 'failure' && failed.length === 0 && r.summary.startsWith('KS_AGENT_UPDATE_FAILED');
    const answers =
      r.outcome === 'failure' && !t.silent && !agentOnly
        ? this.ask({ revision: rev.id, summary: r.summary, failed })
        : [];
    const then = answers.length ? answers.map((a) => a.then).join('; ') : undefined;
    const summary = then === undefined ? r.summary : `${r.summary}; ${then}`;
    const event = revisionEvent(rev, {
      outcome: r.outcome,
      durationMs: now() - t.began,
      summary,
      failed,
      reconcile: r.reconcile,
    });
    try {
      store.transaction(() => {
        store.finishApply(t.historyId, { finishedAt: now(), outcome: r.outcome, summary, failed });
        // What ran well here: a later commit that brings it back is a revert to a known-good state (SPEC §14).
        if (r.outcome === 'success' && r.stateDigest !== undefined) store.recordGoodState(r.stateDigest, rev.id, now());
        // The report tells the failures as published (scrubbed of the values given); the row and the event keep them whole.
        if (!t.silent) this.reports?.finished(finishedReport(event, r, then));
      });
    } catch (e) {
      // Not written (a full disk): no outcome yet. The row stays open, and the loop tries the revision again.
      this.abandoned(t);
      throw e;
    }
    // Said once the row is written: whoever reads the log line finds the history agreeing with it.
    if (r.outcome === 'success')
      this.supLog.info(
        this.deps.store.components().every((c) => c.state === 'running') ? 'all components running' : 'apply finished',
      );
    else this.log.error({ revision: rev.id, failed: failed.map((f) => f.name) }, `apply ${summary}`);
    this.standingFailure = r.outcome === 'failure' && !agentOnly ? standingFailureOf(rev, failed) : undefined;
    this.deps.emit('revision', event);
    for (const a of answers) a.act?.();
  }

  /** Rule 3: the revision the device runs, taken up again after a restart; nothing is written or reported for it. */
  resumed(rev: RevisionInfo, outcome: 'success' | 'failure', given: ApplyResult): void {
    const r = scrubbedResult(given, this.deps.scrub);
    const down = r.failures.map((f) => f.name);
    // One line, the resume's end (tests and people wait for it): what runs, said beside the outcome that stands.
    const all = down.length === 0 && this.deps.store.components().every((c) => c.state === 'running');
    this.log.info(
      { revision: rev.id, outcome, started: r.execution.started, ...(down.length > 0 && { not_healthy: down }) },
      `resumed the revision applied last: its outcome stands (${outcome}); ${all ? 'all components running' : 'not every component is healthy: see keystonectl status'}`,
    );
    if (outcome === 'failure') {
      const last = lastOutcomeOf(this.deps.store, rev.id);
      this.standingFailure = last?.outcome === 'failure' ? standingFailureOf(rev, last.failed) : undefined;
    }
    this.deps.emit('resumed', { revision: rev.id, outcome, summary: r.summary });
    this.checkRecovery();
    // Still failed: what was to be done about it (a rollback a kill cut short) is asked for again. Nothing is written.
    if (this.standingFailure && !r.interrupted)
      for (const a of this.ask({ revision: rev.id, summary: r.summary, failed: r.failures })) a.act?.();
  }

  /**
   * A revision that failed before anything was touched: the agent update it asks for was put back on this device
   * (SPEC §17). A `failure`, not a refusal: the revision was valid, this device could not run it. Its row is
   * finished at once, so standing() says `failed-before` when it is offered again.
   */
  failedUnapplied(rev: RevisionInfo, reason: string, began: number): void {
    const { store, now } = this.deps;
    const summary = this.deps.scrub?.(reason) ?? reason;
    const event = revisionEvent(rev, { outcome: 'failure' as const, durationMs: now() - began, summary, failed: [] });
    store.transaction(() => {
      // An apply cut short before it (this revision's own, or another's) ends here: rule 4, as begin() does.
      const open = this.interrupted ?? store.unfinishedApply();
      if (open) store.finishApply(open.id, interruptedEnd(now(), rev.id, 'failed next'));
      this.interrupted = undefined;
      const id = store.beginApply(applyRow(rev, began, { stopOrder: [], startOrder: [], noTouch: [], reasons: {} }));
      store.finishApply(id, { finishedAt: now(), outcome: 'failure', summary, failed: [] });
      this.reports?.finished(event);
    });
    this.log.error(
      { revision: rev.id, reason: summary },
      'revision failed on this device; still running the previous one',
    );
    this.deps.emit('revision', event);
  }

  /** A revision refused before anything was touched (invalid, unsigned, not for this device). */
  rejected(given: RejectedRevision): void {
    const { store, now } = this.deps;
    const r = { ...given, reason: this.deps.scrub?.(given.reason) ?? given.reason };
    const event = rejectedEvent(r, now() - r.began);
    store.transaction(() => {
      store.recordRejected(rejectedRow(r, now()));
      if (!r.silent) this.reports?.finished(event);
    });
    this.deps.emit('revision', event);
  }

  /** A commit the source refused before the agent saw it (a force-push): a refusal with no plan read. */
  refusedBySource(commit: string, planFile: string, reason: string): void {
    const { store, now } = this.deps;
    store.transaction(() => {
      store.recordRejected({ revision: commit, planFile, at: now(), reason });
      this.reports?.refused(commit, reason);
    });
  }

  /** A commit held at its rollout gate, or halted there (rollout-holds.ts). */
  held(e: HeldEvent): void {
    this.reports?.held(e);
    this.deps.emit('held', e);
  }

  /**
   * A revision waiting for update locks (SPEC §19): `pending` with the reason, once per revision and reason (a retake
   * that finds the same locks held says nothing new). No row: nothing of it was applied.
   */
  waiting(e: AgentEventMap['waiting'][0], stable = e.reason): void {
    const key = `${e.revision}\n${stable}`;
    if (this.lastWaiting === key) return;
    this.lastWaiting = key;
    this.log.info(
      { revision: e.revision, ...(e.wave !== undefined && { wave: e.wave }) },
      `${e.reason}: the revision waits; what runs keeps running`,
    );
    this.reports?.waiting(e);
    this.deps.emit('waiting', e);
  }

  /** Rule 5: called whenever a component becomes healthy; records a recovery once everything the revision asked runs. */
  checkRecovery(): void {
    const f = this.standingFailure;
    if (!f) return;
    const h = this.deps.healthy();
    if (!h?.ok) return;
    const { store, now } = this.deps;
    const summary = recoverySummary(f);
    this.standingFailure = undefined;
    store.recordRecovered(recoveredRow(f, now(), summary));
    this.log.info({ revision: f.revision }, summary);
    this.deps.emit('recovered', { revision: f.revision, summary });
  }

  private ask(o: FailedOutcome): Array<{ then: string; act?: () => void }> {
    return askFailureListeners(this.failureListeners, o, this.log);
  }
}
