// What the history says of a revision on this device, read for outcomes.ts (rules 2–4) and for the rollout refs a
// device keeps. Reads only: outcomes.ts stays the one writer of outcomes, and asks here before it writes.
import { isCommitId } from '../git/commit-id.js';
import type { HistoryEntry, StateStore } from '../store/state-store.js';

/** A revision's own rows read for its standing (its failures are never pruned; store/apply-history.ts). */
const STANDING_LOOKBACK = 200;

/** What taking a revision up means on this device now (the spine's step 4 asks before anything is touched). */
export type Standing =
  /** Never decided here: an apply, with its own row. */
  | { kind: 'new' }
  /** The agent died during this revision's apply: this apply finishes that row. */
  | { kind: 'continue'; historyId: number }
  /** What the device runs, offered again (a restart): resumed, its outcome stands. */
  | { kind: 'resume'; outcome: 'success' | 'failure' }
  /** The commit the device runs, carried out in this run already: nothing to do. */
  | { kind: 'current' }
  /** A commit that failed here and is not what runs: not applied again. */
  | { kind: 'failed-before'; summary: string };

/**
 * Rules 2–4: what applying `rev` means now, given the apply the agent died during (`interrupted`, if any). `identity`
 * is what the plan is chosen with (a device whose name, labels or --plan changed has a new desired state); `loaded`
 * whether the engine carried it out in this run already.
 */
export function standingOf(
  store: StateStore,
  interrupted: HistoryEntry | undefined,
  rev: { id: string; rollback?: boolean; planFile?: string },
  o: { identity: string; loaded: boolean },
): Standing {
  const { id } = rev;
  if (interrupted?.revision === id) return { kind: 'continue', historyId: interrupted.id };
  // An operator's apply is an operator action: a new attempt, whatever came before.
  if (rev.planFile !== undefined) return { kind: 'new' };
  const applied = store.appliedRevision();
  // Another name, other labels, another --plan: another desired state, even from the same commit.
  if (applied?.identity !== undefined && applied.identity !== o.identity) return { kind: 'new' };
  if (applied?.id === id && o.loaded) {
    // A commit offered again in the same run (resumed from the local clone, then found by the first look) is
    // running; a directory changed back to what runs is a new attempt, the developer's.
    return isCommitId(id) ? { kind: 'current' } : { kind: 'new' };
  }
  const rows = rowsOf(store, id);
  const last = rows.find((r) => r.outcome === 'success' || r.outcome === 'failure' || r.outcome === 'recovered');
  if (last && applied?.id === id)
    return { kind: 'resume', outcome: last.outcome === 'success' ? 'success' : 'failure' };
  const failed = rows.find(isFailure);
  // Not even as a rollback's target (rollback-on-failure.ts picks commits whose last outcome here is a success).
  if (failed && isCommitId(id)) return { kind: 'failed-before', summary: failed.summary ?? 'failed' };
  return { kind: 'new' };
}

/** A revision's own rows, newest first. */
export function rowsOf(store: StateStore, id: string): HistoryEntry[] {
  return store.historyOf(id, STANDING_LOOKBACK);
}

/** Commits that failed here lately, newest first: their rollout refs are kept, so a halt stays visible (SPEC §14). */
export function recentFailures(store: StateStore, limit = 4): string[] {
  const out: string[] = [];
  for (const e of store.history({ limit: 50 }))
    if (isFailure(e) && isCommitId(e.revision) && !out.includes(e.revision) && out.length < limit) out.push(e.revision);
  return out;
}

/** A failure the device saw: not an apply that a stop cut short and a newer revision superseded. */
function isFailure(e: HistoryEntry): boolean {
  return e.outcome === 'failure' && e.summary?.startsWith('interrupted') !== true;
}
