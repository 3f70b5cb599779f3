// The newest revision the agent refused (GET /v1/revision's `rejected`): while it is the last thing the agent looked
// at, the device runs an older revision than its source offers, and `keystonectl status` must say so with the code.
import type { HistoryEntry, StateStore } from '../store/state-store.js';
import type { RejectedView } from './views.js';
import { isoTime } from '../core/iso-time.js';

export type { RejectedView };

/**
 * The code in a refusal's reason. Reasons are written as `KS_CODE: message` (trust and Git refusals) or end their
 * first problem with `[KS_CODE]` (an invalid revision, a device check, a fleet without a target for this device).
 */
export function rejectionCode(reason: string): string | undefined {
  return /^(KS_[A-Z0-9_]+):/.exec(reason)?.[1] ?? /\[(KS_[A-Z0-9_]+)\]/.exec(reason)?.[1];
}

/** The newest history entry, when it is a refusal; undefined once anything newer was applied (or is applying). */
export function newestRejection(store: Pick<StateStore, 'history'>): RejectedView | undefined {
  const newest: HistoryEntry | undefined = store.history({ limit: 8 }).find((e) => e.outcome !== 'recovered');
  if (newest?.outcome !== 'rejected') return undefined;
  const reason = newest.summary ?? '';
  return {
    revision: newest.revision,
    at: isoTime(newest.finishedAt ?? newest.startedAt),
    code: rejectionCode(reason) ?? null,
    reason,
  };
}
