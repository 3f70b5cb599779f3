// SPEC §8: what the agent tells the Git host about each commit it takes up — `pending` with the dry-run summary when
// it starts applying, then `success`, `failure` (what failed) or `error` (refused: why). The statuses go to the
// durable outbox (written before anything is sent), which delivers them to every reporter in order, retrying.
import type { EventEmitter } from 'node:events';
import type { Reconcile } from '../core/diff.js';
import { describeFailure, describePending, describeRejected, describeSuccess, describe, type CommitState } from '../status/commit-status.js';
import type { StatusOutbox } from '../status/status-outbox.js';
import type { RolloutState } from '../core/rollout-gate.js';
import type { AgentEventMap } from './agent.js';

/** Only commits have statuses: a directory revision (`dir:…`) or a manual apply (`manual:…`) has nowhere to go. */
export const isCommitId = (id: string): boolean => /^[0-9a-f]{40}$/.test(id);

export interface CommitReportingOptions {
  events: EventEmitter<AgentEventMap>;
  outbox: Pick<StatusOutbox, 'enqueue'>;
  /** `keystone/<device>` */
  context: string;
  now: () => number;
  /** Revisions the agent applies for its own reasons (a rollback): no status of their own. */
  silent?: (revision: string) => boolean;
  /** Appended to a failure's description (e.g. `; rolled back to 3f2a1c0`): decided when the failure is seen. */
  onFailure?: (revision: string) => string | undefined;
  /** The commits whose rollout refs this device keeps (agent.rolloutKeep): asked when a status with a wave is sent. */
  rolloutKeep?: () => string[];
}

export interface CommitReporting {
  /** A commit the source refused before the agent saw it (a force-push): an `error` status. */
  rejected(commit: string, reason: string): void;
  close(): void;
}

export function reportCommitStatuses(opts: CommitReportingOptions): CommitReporting {
  // The fleet target and wave go with every report of the device's own doing, so the fleet view can group by them
  // (SPEC §13–14); with a wave, the rollout ref goes in the same push (rollout-refs.ts).
  const send = (commit: string, state: CommitState, description: string, target?: string, rollout?: { wave: string; state: RolloutState }) => {
    if (!isCommitId(commit) || opts.silent?.(commit)) return;
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
  const onApplying = (e: AgentEventMap['applying'][0]) => send(e.revision, 'pending', describePending(e.reconcile), e.target, wave(e.wave, 'applying'));
  // Held at the gate: `pending` with the reason; halted: `error`, since this device will never apply it.
  const onHeld = (e: AgentEventMap['held'][0]) => send(e.revision, e.halted ? 'error' : 'pending', describe(e.reason), e.target, wave(e.wave, e.halted ? 'halted' : 'held'));
  const onRevision = (e: AgentEventMap['revision'][0]) => {
    if (e.outcome === 'rejected') return send(e.revision, 'error', describeRejected(e.summary), e.target, wave(e.wave, 'error'));
    if (e.outcome === 'success') return send(e.revision, 'success', describeSuccess(e.reconcile ?? emptyPlan), e.target, wave(e.wave, 'success'));
    // Only a commit's failure is the policy's business: a failed manual apply is the operator's to follow up.
    if (!isCommitId(e.revision) || opts.silent?.(e.revision)) return;
    const extra = opts.onFailure?.(e.revision) ?? '';
    // The suffix must survive the 140-character cut: it says what the device runs now.
    const base = describeFailure(e.failed ?? []);
    send(e.revision, 'failure', extra ? describe(base.slice(0, Math.max(20, 140 - extra.length)).replace(/…?$/, '') + extra) : base, e.target, wave(e.wave, 'failure'));
  };
  opts.events.on('applying', onApplying);
  opts.events.on('held', onHeld);
  opts.events.on('revision', onRevision);
  return {
    rejected: (commit, reason) => send(commit, 'error', describeRejected(reason)),
    close() {
      opts.events.off('applying', onApplying);
      opts.events.off('held', onHeld);
      opts.events.off('revision', onRevision);
    },
  };
}

const emptyPlan: Pick<Reconcile, 'stopOrder' | 'startOrder' | 'noTouch'> = { stopOrder: [], startOrder: [], noTouch: [] };
