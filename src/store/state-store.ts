// The state store's one facade (SPEC §5): every caller opens the store and takes its types from here. Synchronous,
// one statement or one transaction per call, and durable when the call returns (WAL + synchronous=FULL): the agent
// writes here before it acts.
import type { DesiredComponent } from '../core/desired-state.js';
import type { ActualState } from '../core/diff.js';
import type { InstanceRef } from '../runtime/runtime.js';
import type { AppliedRevision } from './applied-revision.js';
import {
  DEFAULT_HISTORY_RETENTION,
  type ApplyFailure,
  type ApplyOutcome,
  type ApplyReconcile,
  type HistoryEntry,
} from './apply-history.js';
import type { ComponentRecord, ComponentState, LastExit } from './component-records.js';
import { SqliteStateStore } from './sqlite-state-store.js';
import { openStateDatabase } from './state-database.js';
import { StateStoreError } from './state-store-error.js';
import type { OutboxCounts, OutboxEntry, OutboxInput } from './status-outbox-table.js';
import type { SyncSuspension } from './sync-suspension.js';

export type { AppliedRevision } from './applied-revision.js';
export {
  DEFAULT_HISTORY_RETENTION,
  type ApplyFailure,
  type ApplyOutcome,
  type ApplyReconcile,
  type HistoryEntry,
} from './apply-history.js';
export {
  COMPONENT_STATES,
  LIVE_STATES,
  type ComponentDependency,
  type ComponentRecord,
  type ComponentState,
  type LastExit,
} from './component-records.js';
export { SCHEMA_VERSION } from './migrations.js';
export { BUSY_TIMEOUT_MS, STATE_DB_FILE } from './state-database.js';
export { StateStoreError, type StateStoreCode } from './state-store-error.js';
export type { OutboxCounts, OutboxEntry, OutboxInput } from './status-outbox-table.js';
export type { SyncSuspension } from './sync-suspension.js';

export interface StateStoreOptions {
  /** ms clock for `since` and migration times; default Date.now. */
  now?: () => number;
  /** Finished history entries kept; default DEFAULT_HISTORY_RETENTION. */
  historyRetention?: number;
  /**
   * Hold the database alone while the store is open (SQLite's exclusive locking mode, taken at once): opening fails
   * with KS_STATE_BUSY while any other connection has it open, as a running agent always does. For offline repairs.
   */
  exclusive?: boolean;
  /**
   * The compiled better-sqlite3 to load; default: the bundle's for this Node (sqlite-addon.ts), else node_modules'.
   * Tests run the store on the package's lean SQLite with it (test/store/state-store.test.ts).
   */
  nativeBinding?: string;
}

export interface StateStore {
  /** `<stateDir>/state.db` */
  readonly path: string;
  appliedRevision(): AppliedRevision | undefined;
  /** Records the revision and raises the replay floor to its signedAt (never lowers it), atomically. */
  setAppliedRevision(r: AppliedRevision): void;
  /** The replay floor: the greatest signedAt ever applied (seconds), whatever was applied after it. */
  lastSignedAt(): number | undefined;
  /**
   * Lowers the replay floor to `signedAt` (seconds); never raises it. Only the device owner's repair of a floor raised
   * by a signature from the future (`keystone floor --reset`): the agent itself never lowers it. False when the floor
   * was already at or below `signedAt`, or there is none.
   */
  lowerReplayFloor(signedAt: number): boolean;

  /** In start order (position, then name). */
  components(): ComponentRecord[];
  component(name: string): ComponentRecord | undefined;
  upsertComponent(rec: ComponentRecord): void;
  /** False when there was no such component. */
  removeComponent(name: string): boolean;
  /** The diff's view of the records, in start order. */
  actualState(): ActualState;

  // The supervisor's small writes: one statement each; KS_STATE_NOT_FOUND for an unknown component.
  /** A new instance: state `starting` since `startedAt`, reason and healthySince cleared (restarts kept). */
  recordStart(name: string, instance: InstanceRef, startedAt: number): void;
  /** `since` moves to now only when the state changes; the reason is replaced (cleared when omitted). */
  recordState(name: string, state: ComponentState, reason?: string): void;
  /** Returns the new count. */
  recordRestart(name: string): number;
  recordHealthy(name: string, at: number): void;
  resetRestarts(name: string): void;
  recordHeld(name: string, held: boolean): void;
  /** How the instance ended (GET /v1/components `lastExit`); kept across restarts. */
  recordExit(name: string, exit: LastExit): void;

  /** Returns the apply's id. */
  beginApply(a: {
    revision: string;
    planFile: string;
    target?: string;
    startedAt: number;
    reconcile: ApplyReconcile;
  }): number;
  /** KS_STATE_NOT_FOUND when the id is unknown or already finished. */
  finishApply(
    id: number,
    f: { finishedAt: number; outcome: ApplyOutcome; summary: string; failed?: ApplyFailure[] },
  ): void;
  /** A revision refused before it was applied (invalid, unsigned, replayed): one finished entry. Returns its id. */
  recordRejected(r: { revision: string; planFile: string; target?: string; at: number; reason: string }): number;
  /** The applied revision's components all became healthy after its apply failed (SPEC §5): one finished entry. */
  recordRecovered(r: { revision: string; planFile: string; target?: string; at: number; summary: string }): number;
  /** Newest first; `before` pages to entries with a smaller id. */
  history(q: { limit: number; before?: number }): HistoryEntry[];
  /** One revision's entries, newest first, however much history came after them (failures are never pruned). */
  historyOf(revision: string, limit?: number): HistoryEntry[];
  /** The newest apply without a finish: the agent died during it. Finish it, then ask again for older ones. */
  unfinishedApply(): HistoryEntry | undefined;

  // A composite's rollback (SPEC §12): what grouped components last ran healthy, and groups held back for a revision.
  /** Keeps `spec` as what `name` last started healthy from (KS_STATE_NOT_FOUND for an unknown component). */
  recordSpec(name: string, spec: DesiredComponent): void;
  /** Every kept spec, in start order; a spec that cannot be read is skipped (there is then nothing to roll back to). */
  specs(): DesiredComponent[];
  /** Groups rolled back, with the revision that could not update them. */
  groupRollbacks(): Array<{ group: string; revision: string }>;
  recordGroupRollback(group: string, revision: string): void;
  clearGroupRollbacks(): void;

  /** Present while an operator's forced manual apply holds the Git sync (until `keystonectl resume`). */
  syncSuspension(): SyncSuspension | undefined;
  /** Suspends (or, with undefined, resumes) the Git sync. */
  setSyncSuspension(s: SyncSuspension | undefined): void;

  // Rollouts (SPEC §14).
  /** When this device first saw a success of `wave` for the commit (ms, the Git host's clock). */
  firstSuccessSeen(revision: string, wave: string): number | undefined;
  /** The first observation wins. */
  recordFirstSuccess(revision: string, wave: string, at: number): void;
  /** The revision that last ran the desired state with this digest successfully, if any did. */
  goodState(digest: string): string | undefined;
  recordGoodState(digest: string, revision: string, at: number): void;
  /** The commits held at the rollout gate, newest first, as last recorded (an agent restarted holds them again). */
  heldCommits(): string[];
  setHeldCommits(revisions: readonly string[]): void;

  // The status outbox: rows are written before delivery is tried, and finished rows are pruned to a retention.
  /** Inserts the entries in one transaction, each open and due at its createdAt; returns their ids in order. */
  enqueueOutbox(entries: OutboxInput[]): number[];
  /** The oldest open entry of each (reporter, commit), by id: only these may be delivered next, which keeps order per commit. */
  outboxHeads(): OutboxEntry[];
  /** All entries, newest first (inspection and tests). */
  outboxEntries(q: { limit: number }): OutboxEntry[];
  outboxEntry(id: number): OutboxEntry | undefined;
  /** Finishes an open entry as delivered; false when it was not open. */
  markOutboxDelivered(id: number, at: number): boolean;
  /** Records a failed attempt of an open entry and when to try next. */
  retryOutbox(id: number, r: { attempts: number; nextAttemptAt: number; lastError: string }): boolean;
  /** Finishes an open entry as given up, keeping the error. */
  giveUpOutbox(id: number, r: { attempts: number; lastError: string }): boolean;
  /** Deletes finished entries beyond the newest `keep` finished ones; returns how many went. Open ones are never pruned. */
  pruneOutbox(keep: number): number;
  outboxCounts(): OutboxCounts;

  /** Runs `fn` in one IMMEDIATE transaction (a savepoint when nested); `fn` must be synchronous. */
  transaction<T>(fn: () => T): T;
  /** A consistent copy of the whole store in `file` (replaced): what an agent update puts back (SPEC §17). */
  snapshotTo(file: string): void;
  close(): void;
}

/** Opens (creating and migrating as needed) the store at `<stateDir>/state.db`. */
export function openStateStore(stateDir: string, opts: StateStoreOptions = {}): StateStore {
  const now = opts.now ?? Date.now;
  const retention = opts.historyRetention ?? DEFAULT_HISTORY_RETENTION;
  if (!Number.isSafeInteger(retention) || retention < 1)
    throw new StateStoreError('KS_STATE_INVALID', `historyRetention must be a positive integer, got ${retention}`);
  const { db, file } = openStateDatabase(stateDir, {
    now,
    exclusive: opts.exclusive,
    nativeBinding: opts.nativeBinding,
  });
  return new SqliteStateStore(db, file, now, retention);
}
