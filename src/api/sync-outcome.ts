// The answer of POST /v1/sync?wait=done: what the look found and what became of it, read from the history the loop
// wrote meanwhile (every apply and refusal lands there, Git's own refusals included) and the rollout gate.
import type { ApiAgent } from './api-deps.js';
import { rejectionCode } from './rejected-view.js';

export type SyncOutcomeKind = 'applied' | 'failed' | 'rejected' | 'held' | 'unchanged' | 'applying';

export interface SyncOutcome {
  sync: 'done';
  /**
   * `applied` (success), `failed` (an apply that did not converge), `rejected` (refused before anything was touched),
   * `held` (waiting at the rollout gate), `unchanged` (the source had nothing new for this device).
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
}

/** The history before the look: entries after it, and an apply then under way, end during the wait. */
export interface HistoryMark {
  id: number;
  /** The newest entry was an apply still running: its end counts as news too (the device was not settled). */
  open: boolean;
}

export function historyMark(agent: Pick<ApiAgent, 'store'>): HistoryMark {
  const newest = agent.store.history({ limit: 1 })[0];
  return { id: newest?.id ?? 0, open: newest !== undefined && newest.outcome === undefined };
}

/** undefined when the look failed and found nothing: the caller answers with the failure. */
export function syncOutcome(agent: Pick<ApiAgent, 'store' | 'rolloutHolds'>, mark: HistoryMark, lookFailed: string | undefined): SyncOutcome | undefined {
  const newest = agent.store.history({ limit: 1 })[0];
  const applied = agent.store.appliedRevision()?.id ?? null;
  const rollout = (agent.rolloutHolds?.() ?? []).map((h) => ({ revision: h.revision, wave: h.wave, reason: h.reason }));
  const base = { sync: 'done' as const, applied, rollout };
  if (newest && (newest.id > mark.id || (newest.id === mark.id && mark.open))) {
    const summary = newest.summary ?? '';
    const outcome: SyncOutcomeKind = newest.outcome === 'success' ? 'applied' : newest.outcome === 'failure' ? 'failed' : newest.outcome === 'rejected' ? 'rejected' : 'applying';
    return { ...base, outcome, revision: newest.revision, summary, code: outcome === 'rejected' ? (rejectionCode(summary) ?? null) : null };
  }
  if (lookFailed !== undefined) return undefined;
  const held = rollout[0];
  if (held) return { ...base, outcome: 'held', revision: held.revision, summary: held.reason, code: null };
  return {
    ...base,
    outcome: 'unchanged',
    revision: applied,
    summary: applied === null ? 'the source offers no revision this device can run yet' : 'nothing new: the device runs the newest revision of its source',
    code: null,
  };
}
