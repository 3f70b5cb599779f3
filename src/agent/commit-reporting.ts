// SPEC §8: what the device tells the Git host about each commit it takes up — `pending` with the dry-run summary when
// it starts applying, then `success`, `failure` (what failed) or `error` (refused: why). Called by outcomes.ts, the
// only writer of outcomes, inside the same transaction as the history row: the statuses go to the durable outbox
// (written before anything is sent), which delivers them to every reporter in order, retrying. Each status also
// says what the device is (the agent's version, its health) and, on `failure`, the failing components' last log
// lines, read when the status is decided: so they are synchronous and cheap, and never stop the outcome's write.
import type { DesiredComponent } from '../core/desired-state.js';
import type { Reconcile } from '../core/diff.js';
import { isCommitId } from '../git/commit-id.js';
import type { RolloutState } from '../core/rollout-gate.js';
import {
  describeFailure,
  describePending,
  describeRejected,
  describeSuccess,
  describe,
  type CommitState,
  type DeviceHealth,
  type ReportDetails,
} from '../report/commit-status.js';
import type { StatusOutbox } from '../report/status-outbox.js';
import type { AgentEventMap } from './agent-events.js';

export interface CommitReportingOptions {
  outbox: Pick<StatusOutbox, 'enqueue'>;
  /** `keystone/<device>` */
  context: string;
  now: () => number;
  /** The commits whose rollout refs this device keeps (outcomes.rolloutKeep): asked when a status with a wave is sent. */
  rolloutKeep?: () => string[];
  /** The agent's version, in every status's details (SPEC §8). */
  agentVersion?: string;
  /** The device's health now (device-health.ts), in every status's details. */
  health?: () => DeviceHealth;
  /**
   * On `failure`: the last log lines of the failed components, scrubbed of what they were given (failure-log-tail.ts).
   * `components`: the desired state the apply carried out, whose values scrub them.
   */
  failureLog?: (failed: readonly string[], components: readonly DesiredComponent[]) => readonly string[];
  /** Told when reading the details failed (the status goes without them). */
  onDetailsError?: (e: unknown) => void;
}

/** An outcome as a report: `then` says what the device does about a failure (`rolling back to 3f2a1c0`). */
export type FinishedReport = AgentEventMap['revision'][0] & {
  then?: string;
  /** The desired state's units the apply carried out (before a composite's rollback): what a failure's log lines are scrubbed of. */
  components?: readonly DesiredComponent[];
};

/** What outcomes.ts hands over; each call enqueues at most one status. */
export interface OutcomeReports {
  applying(e: AgentEventMap['applying'][0]): void;
  held(e: AgentEventMap['held'][0]): void;
  /** Waiting for update locks (SPEC §19): `pending` with the reason; in a rollout, `held` (not failed) for the gate. */
  waiting(e: AgentEventMap['waiting'][0]): void;
  finished(e: FinishedReport): void;
  /** A commit the source refused before the agent saw it (a force-push): an `error` status. */
  refused(commit: string, reason: string): void;
}

const emptyPlan: Pick<Reconcile, 'stopOrder' | 'startOrder' | 'noTouch'> = {
  stopOrder: [],
  startOrder: [],
  noTouch: [],
};

export function commitReports(opts: CommitReportingOptions): OutcomeReports {
  // The fleet target and wave go with every report of the device's own doing, so the fleet view can group by them
  // (SPEC §13–14); with a wave, the rollout ref goes in the same push (rollout-refs.ts).
  const send = (
    commit: string,
    state: CommitState,
    description: string,
    target?: string,
    rollout?: { wave: string; state: RolloutState },
    log?: () => readonly string[],
  ) => {
    if (!isCommitId(commit)) return;
    const fields = { ...(target !== undefined && { target }), ...(rollout && { wave: rollout.wave }) };
    const details = detailsOf(opts, log);
    opts.outbox.enqueue({
      commit,
      state,
      description,
      context: opts.context,
      at: opts.now(),
      ...(Object.keys(fields).length > 0 && { fields }),
      ...(rollout && {
        rollout: { ...rollout, keep: (opts.rolloutKeep?.() ?? []).filter((c) => c !== commit).slice(0, 16) },
      }),
      ...(details && { details }),
    });
  };
  const wave = (w: string | undefined, state: RolloutState) => (w === undefined ? undefined : { wave: w, state });
  return {
    applying: (e) => send(e.revision, 'pending', describePending(e.reconcile), e.target, wave(e.wave, 'applying')),
    // Held at the gate: `pending` with the reason; halted: `error`, since this device will never apply it.
    held: (e) =>
      send(
        e.revision,
        e.halted ? 'error' : 'pending',
        describe(e.reason),
        e.target,
        wave(e.wave, e.halted ? 'halted' : 'held'),
      ),
    waiting: (e) => send(e.revision, 'pending', describe(e.reason), e.target, wave(e.wave, 'held')),
    finished(e) {
      if (e.outcome === 'rejected')
        return send(e.revision, 'error', describeRejected(e.summary), e.target, wave(e.wave, 'error'));
      if (e.outcome === 'success')
        return send(
          e.revision,
          'success',
          describeSuccess(e.reconcile ?? emptyPlan),
          e.target,
          wave(e.wave, 'success'),
        );
      // The suffix must survive the 140-character cut: it says what the device runs now.
      const extra = e.then === undefined ? '' : `; ${e.then}`;
      // A failure of no component (an agent update put back, SPEC §17) says its coded reason instead.
      const base =
        !e.failed?.length && e.summary.startsWith('KS_')
          ? describe(`failed: ${e.summary}`)
          : describeFailure(e.failed ?? []);
      const log =
        opts.failureLog &&
        (() =>
          opts.failureLog!(
            (e.failed ?? []).map((f) => f.name),
            e.components ?? [],
          ));
      send(
        e.revision,
        'failure',
        extra ? describe(base.slice(0, Math.max(20, 140 - extra.length)).replace(/…?$/, '') + extra) : base,
        e.target,
        wave(e.wave, 'failure'),
        log,
      );
    },
    refused: (commit, reason) => send(commit, 'error', describeRejected(reason)),
  };
}

/**
 * What the status says beside its state; undefined when the agent gave nothing to say. Reading it must never stop the
 * status (it is enqueued in the outcome's transaction): a part that throws is left out, and the rest goes.
 */
function detailsOf(opts: CommitReportingOptions, log?: () => readonly string[]): ReportDetails | undefined {
  const attempt = <T>(read: () => T): T | undefined => {
    try {
      return read();
    } catch (e) {
      opts.onDetailsError?.(e);
      return undefined;
    }
  };
  const health = opts.health && attempt(opts.health);
  const lines = log && attempt(log);
  const d: ReportDetails = {
    ...(opts.agentVersion !== undefined && { agent: opts.agentVersion }),
    ...(health && { health }),
    ...(lines && lines.length > 0 && { log: [...lines] }),
  };
  return Object.keys(d).length > 0 ? d : undefined;
}
