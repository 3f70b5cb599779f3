// SPEC §8: what the device tells the Git host about each commit it takes up — `pending` with the dry-run summary when
// it starts applying, then `success`, `failure` (what failed) or `error` (refused: why). Called by outcomes.ts, the
// only writer of outcomes, inside the same transaction as the history row: the statuses go to the durable outbox
// (written before anything is sent), which delivers them to every reporter in order, retrying.
import type { Reconcile } from '../core/diff.js';
import { isCommitId } from '../core/commit-id.js';
import type { RolloutState } from '../core/rollout-gate.js';
import { describeFailure, describePending, describeRejected, describeSuccess, describe, type CommitState } from '../status/commit-status.js';
import type { StatusOutbox } from '../status/status-outbox.js';
import type { AgentEventMap } from './agent-events.js';

export interface CommitReportingOptions {
  outbox: Pick<StatusOutbox, 'enqueue'>;
  /** `keystone/<device>` */
  context: string;
  now: () => number;
  /** The commits whose rollout refs this device keeps (outcomes.rolloutKeep): asked when a status with a wave is sent. */
  rolloutKeep?: () => string[];
}

/** An outcome as a report: `then` says what the device does about a failure (`rolling back to 3f2a1c0`). */
export type FinishedReport = AgentEventMap['revision'][0] & { then?: string };

/** What outcomes.ts hands over; each call enqueues at most one status. */
export interface OutcomeReports {
  applying(e: AgentEventMap['applying'][0]): void;
  held(e: AgentEventMap['held'][0]): void;
  finished(e: FinishedReport): void;
  /** A commit the source refused before the agent saw it (a force-push): an `error` status. */
  refused(commit: string, reason: string): void;
}

const emptyPlan: Pick<Reconcile, 'stopOrder' | 'startOrder' | 'noTouch'> = { stopOrder: [], startOrder: [], noTouch: [] };

export function commitReports(opts: CommitReportingOptions): OutcomeReports {
  // The fleet target and wave go with every report of the device's own doing, so the fleet view can group by them
  // (SPEC §13–14); with a wave, the rollout ref goes in the same push (rollout-refs.ts).
  const send = (commit: string, state: CommitState, description: string, target?: string, rollout?: { wave: string; state: RolloutState }) => {
    if (!isCommitId(commit)) return;
    const fields = { ...(target !== undefined && { target }), ...(rollout && { wave: rollout.wave }) };
    opts.outbox.enqueue({
      commit,
      state,
      description,
      context: opts.context,
      at: opts.now(),
      ...(Object.keys(fields).length > 0 && { fields }),
      ...(rollout && { rollout: { ...rollout, keep: (opts.rolloutKeep?.() ?? []).filter((c) => c !== commit).slice(0, 16) } }),
    });
  };
  const wave = (w: string | undefined, state: RolloutState) => (w === undefined ? undefined : { wave: w, state });
  return {
    applying: (e) => send(e.revision, 'pending', describePending(e.reconcile), e.target, wave(e.wave, 'applying')),
    // Held at the gate: `pending` with the reason; halted: `error`, since this device will never apply it.
    held: (e) => send(e.revision, e.halted ? 'error' : 'pending', describe(e.reason), e.target, wave(e.wave, e.halted ? 'halted' : 'held')),
    finished(e) {
      if (e.outcome === 'rejected') return send(e.revision, 'error', describeRejected(e.summary), e.target, wave(e.wave, 'error'));
      if (e.outcome === 'success') return send(e.revision, 'success', describeSuccess(e.reconcile ?? emptyPlan), e.target, wave(e.wave, 'success'));
      // The suffix must survive the 140-character cut: it says what the device runs now.
      const extra = e.then === undefined ? '' : `; ${e.then}`;
      const base = describeFailure(e.failed ?? []);
      send(e.revision, 'failure', extra ? describe(base.slice(0, Math.max(20, 140 - extra.length)).replace(/…?$/, '') + extra) : base, e.target, wave(e.wave, 'failure'));
    },
    refused: (commit, reason) => send(commit, 'error', describeRejected(reason)),
  };
}
