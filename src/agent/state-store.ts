// Durable state of SPEC §5 in SQLite: the applied revision and replay floor, component records with restart
// budgets and instance refs, and the apply history. Synchronous, one statement or one transaction per call,
// and durable when the call returns (WAL + synchronous=FULL): the agent writes here before it acts.
import type { DesiredComponent } from '../core/desired-state.js';
import { closeSync, constants as fsConstants, existsSync, fsyncSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { z } from 'zod';
import type { ActualState } from '../core/diff.js';
import type { DependencyType } from '../core/desired-state.js';
import type { RestartBudget } from '../core/restart-policy.js';
import type { InstanceRef } from '../runtime/runtime.js';
import { checkOwnFileIfPresent, chownSpec, safeDirectory, StateDirError } from '../runtime/safe-path.js';
import {
  applyFinishSchema,
  applyStartSchema,
  checked,
  COMPONENT_STATES,
  componentSchema,
  historyQuerySchema,
  instanceSchema,
  migrate,
  rejectedSchema,
  revisionSchema,
  RowReader,
  stateSchema,
  StateStoreError,
  timeSchema,
  type Row,
} from './state-schema.js';

export { COMPONENT_STATES, SCHEMA_VERSION, StateStoreError, type StateStoreCode } from './state-schema.js';

export const STATE_DB_FILE = 'state.db';
/** How long a write waits for another connection's lock before it fails with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5_000;
/** Finished apply entries kept; older ones are pruned as new ones are written (unfinished ones never are). */
export const DEFAULT_HISTORY_RETENTION = 1_000;

export type ComponentState = (typeof COMPONENT_STATES)[number];
/** The states in which a component counts as running for the diff: it has (or is getting) a live instance. */
export const LIVE_STATES: ReadonlySet<ComponentState> = new Set(['installing', 'starting', 'running', 'unhealthy', 'backoff']);

export interface AppliedRevision {
  id: string;
  source: string;
  planFile: string;
  /** Unix seconds of the signature; undefined exactly when the revision is unsigned. */
  signedAt?: number;
  unsigned: boolean;
  /** ms */
  appliedAt: number;
}

export interface ComponentDependency {
  component: string;
  type: DependencyType;
}

/** One component as the agent last recorded it; `restarts` and `healthySince` are its RestartBudget. */
export interface ComponentRecord extends RestartBudget {
  name: string;
  hash: string;
  version: string;
  runtime: 'process' | 'container';
  /** Start order, set by the writer; ties are broken by name. */
  position: number;
  dependencies: ComponentDependency[];
  /** The last instance started; its kind matches `runtime`. Only meaningful while the state is live. */
  instance?: InstanceRef;
  state: ComponentState;
  /** Held back by an operator (or by the supervisor); crash-looping holds on its own. */
  held: boolean;
  /** Why it is in this state, e.g. "crash-looping after 10 restarts". */
  reason?: string;
  /** ms, when it entered this state. */
  since: number;
  /** The revision that last started or changed it. */
  revision?: string;
  /** The configuration and bound values it was started with (`config.http.port` → `8080`). */
  inputs?: Record<string, string>;
}

/** The reconcile as the history keeps it (a core `Reconcile` may be passed: its other fields are dropped). */
export interface ApplyReconcile {
  stopOrder: string[];
  startOrder: string[];
  noTouch: string[];
  reasons: Record<string, string>;
}

export type ApplyOutcome = 'success' | 'failure' | 'rejected';

export interface ApplyFailure {
  name: string;
  reason: string;
}

export interface HistoryEntry {
  id: number;
  revision: string;
  planFile: string;
  /** ms */
  startedAt: number;
  /** Absent for a revision rejected before it was diffed. */
  reconcile?: ApplyReconcile;
  /** The next three are absent while the apply runs, or when the agent died during it. */
  finishedAt?: number;
  outcome?: ApplyOutcome;
  summary?: string;
  /** Empty unless components failed. */
  failed: ApplyFailure[];
}

export interface SyncSuspension {
  /** ms */
  since: number;
  /** The manual revision that suspended it. */
  revision: string;
  reason: string;
}

/** A status waiting for (or done with) one reporter: one `status_outbox` row (SPEC §5, §8). */
export interface OutboxEntry {
  id: number;
  reporter: string;
  commit: string;
  state: 'pending' | 'success' | 'failure' | 'error';
  description: string;
  context: string;
  targetUrl?: string;
  /** ms */
  createdAt: number;
  attempts: number;
  /** ms; set exactly while the entry is open (not yet delivered nor given up). */
  nextAttemptAt?: number;
  lastError?: string;
  /** ms */
  deliveredAt?: number;
}

export type OutboxInput = Pick<OutboxEntry, 'reporter' | 'commit' | 'state' | 'description' | 'context' | 'targetUrl' | 'createdAt'>;

export interface OutboxCounts {
  /** Still to be delivered. */
  open: number;
  delivered: number;
  /** Given up after a permanent failure (kept, with last_error, until pruned). */
  failed: number;
}

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

  /** Returns the apply's id. */
  beginApply(a: { revision: string; planFile: string; startedAt: number; reconcile: ApplyReconcile }): number;
  /** KS_STATE_NOT_FOUND when the id is unknown or already finished. */
  finishApply(id: number, f: { finishedAt: number; outcome: ApplyOutcome; summary: string; failed?: ApplyFailure[] }): void;
  /** A revision refused before it was applied (invalid, unsigned, replayed): one finished entry. Returns its id. */
  recordRejected(r: { revision: string; planFile: string; at: number; reason: string }): number;
  /** Newest first; `before` pages to entries with a smaller id. */
  history(q: { limit: number; before?: number }): HistoryEntry[];
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
  close(): void;
}

function orNull<T>(v: T | undefined): T | null {
  return v === undefined ? null : v;
}

// ---- opening ----

/** Opens (creating and migrating as needed) the store at `<stateDir>/state.db`. */
export function openStateStore(stateDir: string, opts: StateStoreOptions = {}): StateStore {
  const now = opts.now ?? Date.now;
  const retention = opts.historyRetention ?? DEFAULT_HISTORY_RETENTION;
  if (!Number.isSafeInteger(retention) || retention < 1) throw new StateStoreError('KS_STATE_INVALID', `historyRetention must be a positive integer, got ${retention}`);
  const file = join(stateDir, STATE_DB_FILE);
  const created = prepareFile(stateDir, file);
  let db: Sqlite.Database | undefined;
  try {
    // Exclusive: another connection holds its lock for as long as it is open, so waiting for it is pointless.
    const timeout = opts.exclusive ? 0 : BUSY_TIMEOUT_MS;
    db = new Sqlite(file, { timeout });
    db.pragma(`busy_timeout = ${timeout}`);
    if (opts.exclusive) {
      // Before the first access, so SQLite keeps the WAL index in private memory; the empty transaction takes the lock.
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE; COMMIT');
    }
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new StateStoreError('KS_STATE_OPEN_FAILED', `${file}: the file system refused WAL mode (journal_mode is ${String(mode)})`);
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db, now());
  } catch (e) {
    db?.close();
    if (e instanceof StateStoreError) throw e;
    const code = e instanceof Sqlite.SqliteError ? e.code : undefined;
    if (code === 'SQLITE_BUSY')
      throw new StateStoreError('KS_STATE_BUSY', `${file} is in use by another process (a running keystone agent?): stop it first`, { cause: e });
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT')
      throw new StateStoreError('KS_STATE_CORRUPT', `${file}: not a usable SQLite database (${(e as Error).message}); move it aside to start from empty state`, { cause: e });
    throw new StateStoreError('KS_STATE_OPEN_FAILED', `${file}: cannot open the state database: ${(e as Error).message}`, { cause: e });
  }
  // A new file's directory entry must survive a power cut too (SQLite syncs the directory for its WAL itself).
  if (created) syncDirectory(stateDir);
  return new SqliteStateStore(db, file, now, retention);
}

/** The directory (0700 when created) and an empty 0600 database file; true when the file is new. */
function prepareFile(stateDir: string, file: string): boolean {
  const failed = (e: unknown) => new StateStoreError('KS_STATE_OPEN_FAILED', `state directory ${stateDir}: ${(e as Error).message}`, { cause: e });
  if (existsSync(stateDir) && !statSync(stateDir).isDirectory()) throw failed(new Error('not a directory'));
  try {
    // Reached without following a link, through directories no other user can change (KS_STATE_DIR_UNSAFE).
    safeDirectory(stateDir, { mode: 0o700 });
  } catch (e) {
    if (e instanceof StateDirError) throw e;
    throw failed(e);
  }
  let created: boolean;
  try {
    // O_EXCL: the first opener creates it with our mode; SQLite gives -wal and -shm the same mode.
    closeSync(openSync(file, fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW, 0o600));
    created = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw failed(e);
    created = false;
  }
  // SQLite opens these by name and follows links: each must be the agent's own file, writable by no one else.
  for (const f of [file, `${file}-wal`, `${file}-shm`]) checkOwnFileIfPresent(f, `move it aside if you did not put it there, else chown ${chownSpec()} ${f} && chmod 600 ${f}`);
  return created;
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

// ---- the store ----

const COMPONENT_COLUMNS = 'name, hash, version, runtime, position, dependencies, instance, state, restarts, healthy_since, held, reason, since, revision, inputs';

class SqliteStateStore implements StateStore {
  private readonly read: RowReader;
  private readonly s;

  constructor(
    private readonly db: Sqlite.Database,
    readonly path: string,
    private readonly now: () => number,
    retention: number,
  ) {
    this.read = new RowReader(path);
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      revision: p('SELECT * FROM applied_revision WHERE slot = 1'),
      setRevision: p(`INSERT OR REPLACE INTO applied_revision (slot, id, source, plan_file, signed_at, unsigned, applied_at)
                      VALUES (1, @id, @source, @planFile, @signedAt, @unsigned, @appliedAt)`),
      raiseFloor: p(`INSERT INTO replay_floor (slot, signed_at) VALUES (1, ?)
                     ON CONFLICT (slot) DO UPDATE SET signed_at = max(signed_at, excluded.signed_at)`),
      floor: p('SELECT signed_at FROM replay_floor WHERE slot = 1').pluck(),
      lowerFloor: p('UPDATE replay_floor SET signed_at = ? WHERE slot = 1 AND signed_at > ?'),
      components: p(`SELECT ${COMPONENT_COLUMNS} FROM components ORDER BY position, name`),
      component: p(`SELECT ${COMPONENT_COLUMNS} FROM components WHERE name = ?`),
      upsert: p(`INSERT INTO components (${COMPONENT_COLUMNS})
                 VALUES (@name, @hash, @version, @runtime, @position, @dependencies, @instance, @state, @restarts, @healthySince, @held, @reason, @since, @revision, @inputs)
                 ON CONFLICT (name) DO UPDATE SET hash = excluded.hash, version = excluded.version, runtime = excluded.runtime,
                   position = excluded.position, dependencies = excluded.dependencies, instance = excluded.instance, state = excluded.state,
                   restarts = excluded.restarts, healthy_since = excluded.healthy_since, held = excluded.held, reason = excluded.reason,
                   since = excluded.since, revision = excluded.revision, inputs = excluded.inputs`),
      remove: p('DELETE FROM components WHERE name = ?'),
      start: p(`UPDATE components SET instance = @instance, state = 'starting', since = @at, reason = NULL, healthy_since = NULL
                WHERE name = @name AND runtime = @kind`),
      state: p(`UPDATE components SET since = CASE WHEN state = @state THEN since ELSE @at END, state = @state, reason = @reason
                WHERE name = @name`),
      restart: p('UPDATE components SET restarts = restarts + 1 WHERE name = ? RETURNING restarts').pluck(),
      healthy: p('UPDATE components SET healthy_since = ? WHERE name = ?'),
      resetRestarts: p('UPDATE components SET restarts = 0 WHERE name = ?'),
      held: p('UPDATE components SET held = ? WHERE name = ?'),
      begin: p('INSERT INTO applies (revision, plan_file, started_at, reconcile) VALUES (?, ?, ?, ?) RETURNING id').pluck(),
      finish: p(`UPDATE applies SET finished_at = @finishedAt, outcome = @outcome, summary = @summary, failed = @failed
                 WHERE id = @id AND finished_at IS NULL`),
      rejected: p(`INSERT INTO applies (revision, plan_file, started_at, finished_at, outcome, summary)
                   VALUES (?, ?, ?, ?, 'rejected', ?) RETURNING id`).pluck(),
      prune: p(`DELETE FROM applies WHERE finished_at IS NOT NULL
                  AND id NOT IN (SELECT id FROM applies ORDER BY id DESC LIMIT ${retention})`),
      history: p('SELECT * FROM applies WHERE id < ? ORDER BY id DESC LIMIT ?'),
      unfinished: p('SELECT * FROM applies WHERE finished_at IS NULL ORDER BY id DESC LIMIT 1'),
      setSpec: p('UPDATE components SET spec = ? WHERE name = ?'),
      specs: p('SELECT name, spec FROM components WHERE spec IS NOT NULL ORDER BY position, name'),
      rollbacks: p('SELECT grp, revision FROM group_rollbacks ORDER BY grp'),
      addRollback: p('INSERT OR REPLACE INTO group_rollbacks (grp, revision, at) VALUES (?, ?, ?)'),
      clearRollbacks: p('DELETE FROM group_rollbacks'),
      dataVersion: p('PRAGMA data_version').pluck(),
      suspension: p('SELECT since, revision, reason FROM sync_suspension WHERE slot = 1'),
      suspend: p('INSERT OR REPLACE INTO sync_suspension (slot, since, revision, reason) VALUES (1, @since, @revision, @reason)'),
      resume: p('DELETE FROM sync_suspension'),
    };
  }

  // ---- status outbox ----

  private outboxStatements?: ReturnType<typeof prepareOutbox>;

  private get o(): ReturnType<typeof prepareOutbox> {
    this.outboxStatements ??= prepareOutbox(this.db);
    return this.outboxStatements;
  }

  enqueueOutbox(entries: OutboxInput[]): number[] {
    const rows = entries.map((e, i) => checked(outboxInputSchema, e, `outbox entry #${i}`));
    return this.transaction(() => rows.map((r) => this.o.insert.get({ ...r, targetUrl: orNull(r.targetUrl) }) as number));
  }

  outboxHeads(): OutboxEntry[] {
    return (this.o.heads.all() as Row[]).map((row) => this.outboxRow(row));
  }

  outboxEntries(q: { limit: number }): OutboxEntry[] {
    const limit = checked(z.int().positive(), q.limit, 'outbox limit');
    return (this.o.entries.all(limit) as Row[]).map((row) => this.outboxRow(row));
  }

  outboxEntry(id: number): OutboxEntry | undefined {
    const row = this.o.entry.get(id) as Row | undefined;
    return row && this.outboxRow(row);
  }

  markOutboxDelivered(id: number, at: number): boolean {
    checked(timeSchema, at, 'delivered time');
    return this.o.delivered.run(at, id).changes > 0;
  }

  retryOutbox(id: number, r: { attempts: number; nextAttemptAt: number; lastError: string }): boolean {
    const v = checked(outboxRetrySchema, r, `retry of outbox entry ${id}`);
    return this.o.retry.run({ id, ...v }).changes > 0;
  }

  giveUpOutbox(id: number, r: { attempts: number; lastError: string }): boolean {
    const v = checked(outboxGiveUpSchema, r, `give-up of outbox entry ${id}`);
    return this.o.giveUp.run({ id, ...v }).changes > 0;
  }

  pruneOutbox(keep: number): number {
    const n = checked(z.int().nonnegative(), keep, 'outbox retention');
    return this.o.prune.run(n).changes;
  }

  outboxCounts(): OutboxCounts {
    const row = this.o.counts.get() as { open: number | null; delivered: number | null; failed: number | null };
    return { open: row.open ?? 0, delivered: row.delivered ?? 0, failed: row.failed ?? 0 };
  }

  private outboxRow(row: Row): OutboxEntry {
    const value = Object.fromEntries(
      Object.entries({
        id: row.id,
        reporter: row.reporter,
        commit: row.commit,
        state: row.state,
        description: row.description,
        context: row.context,
        targetUrl: row.target_url,
        createdAt: row.created_at,
        attempts: row.attempts,
        nextAttemptAt: row.next_attempt_at,
        lastError: row.last_error,
        deliveredAt: row.delivered_at,
      }).filter(([, v]) => v !== null && v !== undefined),
    );
    const r = outboxEntrySchema.safeParse(value);
    if (!r.success) throw this.read.corrupt(`status_outbox row ${String(row.id)}`, r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    return r.data as OutboxEntry;
  }

  appliedRevision(): AppliedRevision | undefined {
    const row = this.s.revision.get() as Row | undefined;
    return row && this.read.revision(row);
  }

  setAppliedRevision(r: AppliedRevision): void {
    const v = checked(revisionSchema, r, 'applied revision');
    this.transaction(() => {
      this.s.setRevision.run({ ...v, signedAt: orNull(v.signedAt), unsigned: v.unsigned ? 1 : 0 });
      if (v.signedAt !== undefined) this.s.raiseFloor.run(v.signedAt);
    });
  }

  lowerReplayFloor(signedAt: number): boolean {
    if (!Number.isSafeInteger(signedAt) || signedAt < 0) throw new StateStoreError('KS_STATE_INVALID', `replay floor: expected whole seconds ≥ 0, got ${signedAt}`);
    return this.s.lowerFloor.run(signedAt, signedAt).changes > 0;
  }

  lastSignedAt(): number | undefined {
    const v = this.s.floor.get() as unknown;
    if (v === undefined) return undefined;
    if (!Number.isSafeInteger(v)) throw this.read.corrupt('replay_floor row', `signed_at: expected an integer, found ${JSON.stringify(v)}`);
    return v as number;
  }

  /**
   * The component rows as last read, until this store writes one. Reads outnumber writes by far (every API call,
   * every health tick) and reading 50 rows back through their checks cost most of the agent's CPU under load. Our own
   * writes drop it; another connection's commit (a second store, an operator's sqlite3 shell) changes SQLite's
   * data_version, which is checked on every read (microseconds).
   */
  private cache?: { list: readonly ComponentRecord[]; byName: ReadonlyMap<string, ComponentRecord>; dataVersion: number };

  private cached(): { list: readonly ComponentRecord[]; byName: ReadonlyMap<string, ComponentRecord> } {
    const dataVersion = this.s.dataVersion.get() as number;
    if (this.cache?.dataVersion !== dataVersion) {
      this.cache = undefined;
      // Frozen: a caller that changed a shared record in place would change every later reader's view.
      const list = (this.s.components.all() as Row[]).map((row) => deepFreeze(this.read.component(row)));
      this.cache = { list, byName: new Map(list.map((c) => [c.name, c])), dataVersion };
    }
    return this.cache;
  }

  components(): ComponentRecord[] {
    return [...this.cached().list];
  }

  component(name: string): ComponentRecord | undefined {
    try {
      return this.cached().byName.get(name);
    } catch (e) {
      if (!(e instanceof StateStoreError) || e.code !== 'KS_STATE_CORRUPT') throw e;
      // Another row is unreadable: this one may still be fine, and the agent can go on with it.
      const row = this.s.component.get(name) as Row | undefined;
      return row && this.read.component(row);
    }
  }

  upsertComponent(rec: ComponentRecord): void {
    this.cache = undefined;
    const v = checked(componentSchema, rec, `component ${JSON.stringify((rec as Partial<ComponentRecord>).name)}`);
    this.s.upsert.run({
      ...v,
      dependencies: JSON.stringify(v.dependencies),
      instance: v.instance ? JSON.stringify(v.instance) : null,
      healthySince: orNull(v.healthySince),
      held: v.held ? 1 : 0,
      reason: orNull(v.reason),
      revision: orNull(v.revision),
      inputs: v.inputs ? JSON.stringify(v.inputs) : null,
    });
  }

  removeComponent(name: string): boolean {
    this.cache = undefined;
    return this.s.remove.run(name).changes > 0;
  }

  actualState(): ActualState {
    return {
      components: this.components().map((c) => ({
        name: c.name,
        hash: c.hash,
        version: c.version,
        running: LIVE_STATES.has(c.state),
        held: c.state === 'crash-looping' || c.held,
        dependencies: c.dependencies,
        ...(c.inputs && { inputs: c.inputs }),
      })),
    };
  }

  recordStart(name: string, instance: InstanceRef, startedAt: number): void {
    this.cache = undefined;
    const ref = checked(instanceSchema, instance, `instance of ${JSON.stringify(name)}`);
    checked(timeSchema, startedAt, 'startedAt');
    const changes = this.s.start.run({ name, instance: JSON.stringify(ref), at: startedAt, kind: ref.kind }).changes;
    if (changes === 0) {
      const rec = this.component(name);
      if (rec) throw new StateStoreError('KS_STATE_INVALID', `component ${JSON.stringify(name)} runs as a ${rec.runtime}, not a ${ref.kind}`);
      this.missing(name);
    }
  }

  recordState(name: string, state: ComponentState, reason?: string): void {
    this.cache = undefined;
    checked(stateSchema, state, 'state');
    this.expectOne(name, this.s.state.run({ name, state, reason: orNull(reason), at: this.now() }).changes);
  }

  recordRestart(name: string): number {
    this.cache = undefined;
    const n = this.s.restart.get(name) as number | undefined;
    if (n === undefined) this.missing(name);
    return n;
  }

  recordHealthy(name: string, at: number): void {
    this.cache = undefined;
    checked(timeSchema, at, 'healthy time');
    this.expectOne(name, this.s.healthy.run(at, name).changes);
  }

  resetRestarts(name: string): void {
    this.cache = undefined;
    this.expectOne(name, this.s.resetRestarts.run(name).changes);
  }

  recordHeld(name: string, held: boolean): void {
    this.cache = undefined;
    this.expectOne(name, this.s.held.run(held ? 1 : 0, name).changes);
  }

  beginApply(a: { revision: string; planFile: string; startedAt: number; reconcile: ApplyReconcile }): number {
    const v = checked(applyStartSchema, a, 'apply');
    return this.transaction(() => {
      const id = this.s.begin.get(v.revision, v.planFile, v.startedAt, JSON.stringify(v.reconcile)) as number;
      this.s.prune.run();
      return id;
    });
  }

  finishApply(id: number, f: { finishedAt: number; outcome: ApplyOutcome; summary: string; failed?: ApplyFailure[] }): void {
    const v = checked(applyFinishSchema, f, `finish of apply ${id}`);
    const failed = v.failed?.length ? JSON.stringify(v.failed) : null;
    if (this.s.finish.run({ id, finishedAt: v.finishedAt, outcome: v.outcome, summary: v.summary, failed }).changes === 0)
      throw new StateStoreError('KS_STATE_NOT_FOUND', `apply ${id} does not exist or is already finished`);
  }

  recordRejected(r: { revision: string; planFile: string; at: number; reason: string }): number {
    const v = checked(rejectedSchema, r, 'rejected revision');
    return this.transaction(() => {
      const id = this.s.rejected.get(v.revision, v.planFile, v.at, v.at, v.reason) as number;
      this.s.prune.run();
      return id;
    });
  }

  history(q: { limit: number; before?: number }): HistoryEntry[] {
    const v = checked(historyQuerySchema, q, 'history query');
    const rows = this.s.history.all(v.before ?? Number.MAX_SAFE_INTEGER, v.limit) as Row[];
    return rows.map((row) => this.read.history(row));
  }

  recordSpec(name: string, spec: DesiredComponent): void {
    // Not part of the cached record: a spec is only read when an apply begins.
    if (this.s.setSpec.run(JSON.stringify(spec), name).changes === 0) throw new StateStoreError('KS_STATE_NOT_FOUND', `no component ${JSON.stringify(name)}`);
  }

  specs(): DesiredComponent[] {
    return (this.s.specs.all() as Array<{ name: string; spec: string }>).flatMap((r) => {
      try {
        const spec = JSON.parse(r.spec) as DesiredComponent;
        return spec && spec.name === r.name && spec.recipe?.lifecycle?.run ? [spec] : [];
      } catch {
        return [];
      }
    });
  }

  groupRollbacks(): Array<{ group: string; revision: string }> {
    return (this.s.rollbacks.all() as Array<{ grp: string; revision: string }>).map((r) => ({ group: r.grp, revision: r.revision }));
  }

  recordGroupRollback(group: string, revision: string): void {
    this.s.addRollback.run(group, revision, this.now());
  }

  clearGroupRollbacks(): void {
    this.s.clearRollbacks.run();
  }

  unfinishedApply(): HistoryEntry | undefined {
    const row = this.s.unfinished.get() as Row | undefined;
    return row && this.read.history(row);
  }

  syncSuspension(): SyncSuspension | undefined {
    const row = this.s.suspension.get() as { since: unknown; revision: unknown; reason: unknown } | undefined;
    if (!row) return undefined;
    if (!Number.isSafeInteger(row.since) || typeof row.revision !== 'string' || typeof row.reason !== 'string')
      throw this.read.corrupt('sync_suspension row', 'expected since (integer), revision and reason (text)');
    return { since: row.since as number, revision: row.revision, reason: row.reason };
  }

  setSyncSuspension(s: SyncSuspension | undefined): void {
    if (s === undefined) this.s.resume.run();
    else {
      if (!Number.isSafeInteger(s.since) || s.revision === '' || s.reason === '') throw new StateStoreError('KS_STATE_INVALID', 'a sync suspension needs since, revision and reason');
      this.s.suspend.run(s);
    }
  }

  transaction<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (e) {
      // Rolled back: what was read inside may have seen writes that never happened.
      this.cache = undefined;
      throw e;
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  private expectOne(name: string, changes: number): void {
    if (changes === 0) this.missing(name);
  }

  private missing(name: string): never {
    throw new StateStoreError('KS_STATE_NOT_FOUND', `no component ${JSON.stringify(name)} in the state store`);
  }
}

// ---- status outbox: row shapes and statements (kept apart from the statements above, which predate it) ----

const outboxStateSchema = z.enum(['pending', 'success', 'failure', 'error']);
const outboxInputSchema = z.object({
  reporter: z.string().min(1),
  commit: z.string().regex(/^[0-9a-f]{40}$/, 'must be 40 lowercase hex'),
  state: outboxStateSchema,
  description: z.string(),
  context: z.string().min(1),
  targetUrl: z.string().min(1).optional(),
  createdAt: timeSchema,
});
const outboxEntrySchema = outboxInputSchema.extend({
  id: z.int().positive(),
  attempts: z.int().nonnegative(),
  nextAttemptAt: timeSchema.optional(),
  lastError: z.string().optional(),
  deliveredAt: timeSchema.optional(),
});
const outboxRetrySchema = z.object({ attempts: z.int().nonnegative(), nextAttemptAt: timeSchema, lastError: z.string() });
const outboxGiveUpSchema = z.object({ attempts: z.int().nonnegative(), lastError: z.string().min(1) });

const OUTBOX_COLUMNS = 'id, reporter, "commit", state, description, context, target_url, created_at, attempts, next_attempt_at, last_error, delivered_at';

function prepareOutbox(db: Sqlite.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    insert: p(`INSERT INTO status_outbox (reporter, "commit", state, description, context, target_url, created_at, next_attempt_at)
               VALUES (@reporter, @commit, @state, @description, @context, @targetUrl, @createdAt, @createdAt) RETURNING id`).pluck(),
    heads: p(`SELECT ${OUTBOX_COLUMNS} FROM status_outbox o WHERE next_attempt_at IS NOT NULL
                AND id = (SELECT min(id) FROM status_outbox h WHERE h.reporter = o.reporter AND h."commit" = o."commit" AND h.next_attempt_at IS NOT NULL)
              ORDER BY id`),
    entries: p(`SELECT ${OUTBOX_COLUMNS} FROM status_outbox ORDER BY id DESC LIMIT ?`),
    entry: p(`SELECT ${OUTBOX_COLUMNS} FROM status_outbox WHERE id = ?`),
    delivered: p('UPDATE status_outbox SET delivered_at = ?, next_attempt_at = NULL, attempts = attempts + 1 WHERE id = ? AND next_attempt_at IS NOT NULL'),
    retry: p(`UPDATE status_outbox SET attempts = @attempts, next_attempt_at = @nextAttemptAt, last_error = @lastError
              WHERE id = @id AND next_attempt_at IS NOT NULL`),
    giveUp: p(`UPDATE status_outbox SET attempts = @attempts, next_attempt_at = NULL, last_error = @lastError
               WHERE id = @id AND next_attempt_at IS NOT NULL`),
    prune: p(`DELETE FROM status_outbox WHERE next_attempt_at IS NULL
                AND id NOT IN (SELECT id FROM status_outbox WHERE next_attempt_at IS NULL ORDER BY id DESC LIMIT ?)`),
    counts: p(`SELECT sum(next_attempt_at IS NOT NULL) AS open, sum(delivered_at IS NOT NULL) AS delivered,
                      sum(next_attempt_at IS NULL AND delivered_at IS NULL) AS failed FROM status_outbox`),
  };
}

/** Freezes a record and the arrays and objects inside it. */
function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const inner of Object.values(v)) deepFreeze(inner);
  }
  return v;
}
