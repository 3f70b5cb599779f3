// The answer of POST /v1/sync?wait=done: what the look found and what became of it, read from the history the loop
// wrote meanwhile (every apply and refusal lands there, Git's own refusals included) and the rollout gate.
import type { ApiAgent } from './api-deps.js';
import { rejectionCode } from './rejected-view.js';

export type SyncOutcomeKind = 'applied' | 'failed' | 'rejected' | 'held' | 'unchanged' | 'applying';

export interface SyncOutcome {
  sync: 'done';
  /**
   * `applied` (success), `failed` (an apply that did not converge), `rejected` (refused before anything was touched),
   * `held` (waiting at the rollout gate, or for a component's update lock), `unchanged` (the source had nothing new for this device).
   */
  outcome: SyncOutcomeKind;
  /** The revision the outcome is about; for `unchanged`, the one the device runs (null when none yet). */
  revision: string | null;
  summary: string;
  /** The refusal's code, for `rejected`. */
  code: string | null;
  /** What the device runs now. */
  applied: string | null;
  /** Commits held at the rollout gate after the look, newest first (SPEC §14). */
  rollout: Array<{ revision: string; wave: string; reason: string }>;
  /**
   * How the apply of what the device runs ended (SPEC §5): `success`, `failure`, `recovered` (failed, healthy since),
   * `applying`, or null when none is known. A look that found nothing new on a device whose revision failed is no
   * success: `keystonectl sync` exits 1 for it.
   */
  appliedOutcome: 'success' | 'failure' | 'recovered' | 'applying' | null;
}

/** The outcome of the applied revision's own apply, and of a recovery since. */
function appliedOutcomeOf(agent: Pick<ApiAgent, 'store'>, applied: string | null): SyncOutcome['appliedOutcome'] {
  if (applied === null) return null;
  const mine = agent.store.historyOf(applied, 50).filter((e) => e.outcome !== 'rejected');
  const apply = mine.find((e) => e.outcome !== 'recovered');
  if (!apply) return null;
  if (apply.outcome === undefined) return 'applying';
  if (apply.outcome === 'failure' && mine.some((e) => e.outcome === 'recovered' && e.id > apply.id)) return 'recovered';
  return apply.outcome === 'success' ? 'success' : 'failure';
}

/** The history before the look: entries after it, and an apply then under way, end during the wait. */
export interface HistoryMark {
  id: number;
  /** The newest entry was an apply still running: its end counts as news too (the device was not settled). */
  open: boolean;
}

/** The newest entry about a revision taken up (a recovery is about what runs, not about what a look found). */
function newestTaken(agent: Pick<ApiAgent, 'store'>) {
  return agent.store.history({ limit: 8 }).find((e) => e.outcome !== 'recovered');
}

export function historyMark(agent: Pick<ApiAgent, 'store'>): HistoryMark {
  const newest = newestTaken(agent);
  return { id: newest?.id ?? 0, open: newest !== undefined && newest.outcome === undefined };
}

/** undefined when the look failed and found nothing: the caller answers with the failure. */
export function syncOutcome(
  agent: Pick<ApiAgent, 'store' | 'rolloutHolds' | 'waiting'>,
  mark: HistoryMark,
  lookFailed: string | undefined,
): SyncOutcome | undefined {
  const newest = newestTaken(agent);
  const applied = agent.store.appliedRevision()?.id ?? null;
  const rollout = (agent.rolloutHolds?.() ?? []).map((h) => ({ revision: h.revision, wave: h.wave, reason: h.reason }));
  const base = { sync: 'done' as const, applied, rollout, appliedOutcome: appliedOutcomeOf(agent, applied) };
  if (newest && (newest.id > mark.id || (newest.id === mark.id && mark.open))) {
    const summary = newest.summary ?? '';
    const outcome: SyncOutcomeKind =
      newest.outcome === 'success'
        ? 'applied'
        : newest.outcome === 'failure'
          ? 'failed'
          : newest.outcome === 'rejected'
            ? 'rejected'
            : 'applying';
    return {
      ...base,
      outcome,
      revision: newest.revision,
      summary,
      code: outcome === 'rejected' ? (rejectionCode(summary) ?? null) : null,
    };
  }
  if (lookFailed !== undefined) return undefined;
  // Waiting for a component's update lock (SPEC §19): held on the device, not at the gate.
  const waiting = agent.waiting?.();
  if (waiting) return { ...base, outcome: 'held', revision: waiting.revision, summary: waiting.reason, code: null };
  const held = rollout[0];
  if (held) return { ...base, outcome: 'held', revision: held.revision, summary: held.reason, code: null };
  return {
    ...base,
    outcome: 'unchanged',
    revision: applied,
    summary:
      applied === null
        ? 'the source offers no revision this device can run yet'
        : 'nothing new: the device runs the newest revision of its source',
    code: null,
  };
}
