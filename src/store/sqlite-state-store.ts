// The store behind the facade: the table modules composed around one connection, with one transaction and a read
// cache of the component records (the reads that outnumber every write).
import { closeSync, openSync, rmSync } from 'node:fs';
import type Sqlite from 'better-sqlite3';
import type { DesiredComponent } from '../core/desired-state.js';
import type { ActualState } from '../core/diff.js';
import type { InstanceRef } from '../runtime/runtime.js';
import { AppliedRevisionTable, type AppliedRevision } from './applied-revision.js';
import {
  ApplyHistory,
  type ApplyFailure,
  type ApplyOutcome,
  type ApplyReconcile,
  type HistoryEntry,
} from './apply-history.js';
import {
  actualStateOf,
  ComponentRecords,
  type ComponentRecord,
  type ComponentState,
  type LastExit,
} from './component-records.js';
import { ComponentCache } from './component-cache.js';
import { GroupRollbacks } from './group-rollbacks.js';
import { RowReader } from './row-reader.js';
import { writeFailure } from './state-store-error.js';
import { StatusOutboxTable, type OutboxCounts, type OutboxEntry, type OutboxInput } from './status-outbox-table.js';
import { SyncSuspensionTable, type SyncSuspension } from './sync-suspension.js';
import { RolloutMemory } from './rollout-memory.js';
import { UnitSpecs } from './unit-specs.js';

// It implements StateStore (state-store.ts): checked where openStateStore returns it, so the facade and this class
// do not import each other.
export class SqliteStateStore {
  private readonly revisions;
  private readonly records;
  private readonly applies;
  private readonly unitSpecs;
  private readonly rollbacks;
  private readonly suspension;
  private readonly outbox;
  private readonly rollouts;
  /** The component rows as last read, until this store writes one (component-cache.ts). */
  private readonly cache;

  constructor(
    private readonly db: Sqlite.Database,
    readonly path: string,
    now: () => number,
    retention: number,
  ) {
    const ctx = { db, read: new RowReader(path), now, transaction: <T>(fn: () => T): T => this.transaction(fn) };
    this.revisions = new AppliedRevisionTable(ctx);
    this.records = new ComponentRecords(ctx);
    this.applies = new ApplyHistory(ctx, retention);
    this.unitSpecs = new UnitSpecs(ctx);
    this.rollbacks = new GroupRollbacks(ctx);
    this.suspension = new SyncSuspensionTable(ctx);
    this.outbox = new StatusOutboxTable(ctx);
    this.rollouts = new RolloutMemory(ctx);
    this.cache = new ComponentCache(db, this.records);
  }

  appliedRevision(): AppliedRevision | undefined {
    return this.revisions.get();
  }

  setAppliedRevision(r: AppliedRevision): void {
    this.write(() => this.revisions.set(r));
  }

  lowerReplayFloor(signedAt: number): boolean {
    return this.write(() => this.revisions.lowerReplayFloor(signedAt));
  }

  lastSignedAt(): number | undefined {
    return this.revisions.lastSignedAt();
  }

  components(): ComponentRecord[] {
    return [...this.cache.cached().list];
  }

  component(name: string): ComponentRecord | undefined {
    return this.cache.component(name);
  }

  // Every write to the components table drops the cache first, even one that then fails.
  upsertComponent(rec: ComponentRecord): void {
    this.cache.drop();
    this.write(() => this.records.upsert(rec));
  }

  removeComponent(name: string): boolean {
    this.cache.drop();
    return this.write(() => this.records.remove(name));
  }

  actualState(): ActualState {
    return actualStateOf(this.components());
  }

  recordStart(name: string, instance: InstanceRef, startedAt: number): void {
    this.cache.drop();
    this.write(() => this.records.recordStart(name, instance, startedAt));
  }

  recordState(name: string, state: ComponentState, reason?: string): void {
    this.cache.drop();
    this.write(() => this.records.recordState(name, state, reason));
  }

  recordRestart(name: string): number {
    this.cache.drop();
    return this.write(() => this.records.recordRestart(name));
  }

  recordHealthy(name: string, at: number): void {
    this.cache.drop();
    this.write(() => this.records.recordHealthy(name, at));
  }

  resetRestarts(name: string): void {
    this.cache.drop();
    this.write(() => this.records.resetRestarts(name));
  }

  recordHeld(name: string, held: boolean): void {
    this.cache.drop();
    this.write(() => this.records.recordHeld(name, held));
  }

  recordExit(name: string, exit: LastExit): void {
    this.cache.drop();
    this.write(() => this.records.recordExit(name, exit));
  }

  beginApply(a: {
    revision: string;
    planFile: string;
    target?: string;
    startedAt: number;
    reconcile: ApplyReconcile;
  }): number {
    return this.write(() => this.applies.begin(a));
  }

  finishApply(
    id: number,
    f: { finishedAt: number; outcome: ApplyOutcome; summary: string; failed?: ApplyFailure[] },
  ): void {
    this.write(() => this.applies.finish(id, f));
  }

  recordRejected(r: { revision: string; planFile: string; target?: string; at: number; reason: string }): number {
    return this.write(() => this.applies.recordRejected(r));
  }

  recordRecovered(r: { revision: string; planFile: string; target?: string; at: number; summary: string }): number {
    return this.write(() => this.applies.recordRecovered(r));
  }

  historyOf(revision: string, limit = 100): HistoryEntry[] {
    return this.applies.historyOf(revision, limit);
  }

  history(q: { limit: number; before?: number }): HistoryEntry[] {
    return this.applies.history(q);
  }

  unfinishedApply(): HistoryEntry | undefined {
    return this.applies.unfinished();
  }

  recordSpec(name: string, spec: DesiredComponent): void {
    this.write(() => this.unitSpecs.recordSpec(name, spec));
  }

  specs(): DesiredComponent[] {
    return this.unitSpecs.specs();
  }

  groupRollbacks(): Array<{ group: string; revision: string }> {
    return this.rollbacks.all();
  }

  recordGroupRollback(group: string, revision: string): void {
    this.write(() => this.rollbacks.record(group, revision));
  }

  clearGroupRollbacks(): void {
    this.write(() => this.rollbacks.clear());
  }

  syncSuspension(): SyncSuspension | undefined {
    return this.suspension.get();
  }

  firstSuccessSeen(revision: string, wave: string): number | undefined {
    return this.rollouts.firstSuccessSeen(revision, wave);
  }

  recordFirstSuccess(revision: string, wave: string, at: number): void {
    this.write(() => this.rollouts.recordFirstSuccess(revision, wave, at));
  }

  heldCommits(): string[] {
    return this.rollouts.heldCommits();
  }

  setHeldCommits(revisions: readonly string[]): void {
    this.write(() => this.rollouts.setHeldCommits(revisions));
  }

  goodState(digest: string): string | undefined {
    return this.rollouts.goodState(digest);
  }

  recordGoodState(digest: string, revision: string, at: number): void {
    this.write(() => this.rollouts.recordGoodState(digest, revision, at));
  }

  setSyncSuspension(s: SyncSuspension | undefined): void {
    this.write(() => this.suspension.set(s));
  }

  enqueueOutbox(entries: OutboxInput[]): number[] {
    return this.write(() => this.outbox.enqueue(entries));
  }

  outboxHeads(): OutboxEntry[] {
    return this.outbox.heads();
  }

  outboxEntries(q: { limit: number }): OutboxEntry[] {
    return this.outbox.entries(q);
  }

  outboxEntry(id: number): OutboxEntry | undefined {
    return this.outbox.entry(id);
  }

  markOutboxDelivered(id: number, at: number): boolean {
    return this.write(() => this.outbox.markDelivered(id, at));
  }

  retryOutbox(id: number, r: { attempts: number; nextAttemptAt: number; lastError: string }): boolean {
    return this.write(() => this.outbox.retry(id, r));
  }

  giveUpOutbox(id: number, r: { attempts: number; lastError: string }): boolean {
    return this.write(() => this.outbox.giveUp(id, r));
  }

  pruneOutbox(keep: number): number {
    return this.write(() => this.outbox.prune(keep));
  }

  outboxCounts(): OutboxCounts {
    return this.outbox.counts();
  }

  transaction<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (e) {
      // Rolled back: what was read inside may have seen writes that never happened.
      this.cache.drop();
      throw writeFailure(e, this.path);
    }
  }

  /** A write, with SQLite's "disk full" turned into the store's code: the agent reports it and carries on. */
  private write<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw writeFailure(e, this.path);
    }
  }

  snapshotTo(file: string): void {
    rmSync(file, { force: true });
    // Made empty with the store's own mode first: VACUUM INTO would create it 0644 (and accepts an empty file).
    closeSync(openSync(file, 'wx', 0o600));
    this.db.prepare('VACUUM INTO ?').run(file);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
