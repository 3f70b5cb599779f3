// The shapes Outcomes (outcomes.ts) takes and hands out: its dependencies, an apply's ticket, the standing failure it
// remembers. Apart so the one writer of outcomes reads as its rules; nothing here writes.
import type { Logger } from '../log/logger.js';
import type { StateStore } from '../store/state-store.js';
import type { Emit } from './agent-events.js';
import type { RevisionInfo } from './engine-types.js';

/** What an apply's row says it changes (the diff's stop and start orders, what it leaves alone, and why). */
export type ApplyReconcile = Parameters<StateStore['beginApply']>[0]['reconcile'];

/** A revision on its way through an apply: what its row and its reports need. */
export interface ApplyTicket {
  historyId: number;
  rev: RevisionInfo;
  began: number;
  /** The agent's own rollback: no report of its own. */
  silent: boolean;
}

export interface OutcomesDeps {
  store: StateStore;
  emit: Emit;
  log: Logger;
  now: () => number;
  /**
   * Whether every component of the applied revision runs healthy as it asked (undefined while an apply runs or before
   * a revision is loaded): a failed revision's recovery is recorded once this says so.
   */
  healthy: () => { ok: boolean; down: string[] } | undefined;
  /** Cleans text of secret values (SPEC §16) before it is recorded, told or reported; the identity without secrets. */
  scrub?: (text: string) => string;
}

/** The applied revision while its last outcome is a failure nothing has recovered yet. */
export interface StandingFailure {
  revision: string;
  planFile: string;
  target?: string;
  failed: string[];
}

/** A revision refused before anything was touched (invalid, unsigned, not for this device): what Outcomes is told. */
export interface RejectedRevision {
  revision: string;
  planFile: string;
  target?: string;
  wave?: string;
  reason: string;
  began: number;
  silent: boolean;
}
