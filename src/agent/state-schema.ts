// What the state store keeps on disk: the tables, their numbered migrations (each applied once, in one
// transaction), and the shapes every value is checked against on its way in and on its way back out.
import type { Database } from 'better-sqlite3';
import { z } from 'zod';
import type { AppliedRevision, ApplyFailure, ApplyReconcile, ComponentRecord, HistoryEntry } from './state-store.js';

/** Every code the state store throws. Stable: the agent and tests branch on them. */
export type StateStoreCode =
  /** A row read back does not have the shape it was written with (or the file is no database). */
  | 'KS_STATE_CORRUPT'
  /** A write was refused before it reached the database: the value breaks the store's contract. */
  | 'KS_STATE_INVALID'
  /** A named write addressed a component or apply that has no row (or an apply already finished). */
  | 'KS_STATE_NOT_FOUND'
  /** The database was migrated by a newer agent: reading it with this one could lose data. */
  | 'KS_STATE_SCHEMA_TOO_NEW'
  /** The state directory or database cannot be opened or set up as the store needs. */
  | 'KS_STATE_OPEN_FAILED'
  /** Opened for exclusive use (offline maintenance) while another connection, such as a running agent, has it open. */
  | 'KS_STATE_BUSY';

export class StateStoreError extends Error {
  constructor(
    readonly code: StateStoreCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StateStoreError';
  }
}

export interface Migration {
  /** 1, 2, 3 …: applied in order, each exactly once; never renumber or edit one that has shipped. */
  version: number;
  name: string;
  sql: string;
}

/**
 * Later issues append here (status outbox, …). STRICT tables make SQLite enforce the column types;
 * the CHECKs keep foreign writers (an operator's sqlite3 shell) from storing states the agent does not know.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'applied revision, replay floor, components, apply history',
    sql: `
      CREATE TABLE applied_revision (
        slot        INTEGER PRIMARY KEY CHECK (slot = 1),
        id          TEXT    NOT NULL,
        source      TEXT    NOT NULL,
        plan_file   TEXT    NOT NULL,
        signed_at   INTEGER,
        unsigned    INTEGER NOT NULL CHECK (unsigned IN (0, 1)),
        applied_at  INTEGER NOT NULL
      ) STRICT;

      -- The greatest signed time ever applied: only ever raised (SPEC §6 replay check).
      CREATE TABLE replay_floor (
        slot        INTEGER PRIMARY KEY CHECK (slot = 1),
        signed_at   INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE components (
        name          TEXT    PRIMARY KEY,
        hash          TEXT    NOT NULL,
        version       TEXT    NOT NULL,
        runtime       TEXT    NOT NULL CHECK (runtime IN ('process', 'container')),
        position      INTEGER NOT NULL,
        dependencies  TEXT    NOT NULL,
        instance      TEXT,
        state         TEXT    NOT NULL CHECK (state IN ('installing', 'starting', 'running', 'unhealthy', 'backoff',
                                                        'crash-looping', 'failed', 'stopping', 'stopped')),
        restarts      INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),
        healthy_since INTEGER,
        held          INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1)),
        reason        TEXT,
        since         INTEGER NOT NULL,
        revision      TEXT
      ) STRICT;
      CREATE INDEX components_by_position ON components (position, name);

      -- AUTOINCREMENT: an id is never reused, even after old entries are pruned, so paging and reports stay stable.
      CREATE TABLE applies (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        revision     TEXT    NOT NULL,
        plan_file    TEXT    NOT NULL,
        started_at   INTEGER NOT NULL,
        reconcile    TEXT,
        finished_at  INTEGER,
        outcome      TEXT    CHECK (outcome IN ('success', 'failure', 'rejected')),
        summary      TEXT,
        failed       TEXT,
        CHECK ((finished_at IS NULL) = (outcome IS NULL))
      ) STRICT;
      CREATE INDEX applies_unfinished ON applies (id) WHERE finished_at IS NULL;
    `,
  },
  {
    version: 2,
    name: 'sync suspension (a forced manual apply holds the Git sync until resumed)',
    sql: `
      -- Present while suspended: an agent restart must not quietly resume a sync the operator suspended.
      CREATE TABLE sync_suspension (
        slot        INTEGER PRIMARY KEY CHECK (slot = 1),
        since       INTEGER NOT NULL,
        revision    TEXT    NOT NULL,
        reason      TEXT    NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 3,
    name: 'status outbox',
    // One row per (status, reporter), written before any delivery is tried. A row is open while next_attempt_at is
    // set; it is finished when delivered (delivered_at) or given up (last_error kept, both times NULL). "commit" is
    // quoted because COMMIT is an SQL keyword.
    sql: `
      CREATE TABLE status_outbox (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        reporter         TEXT    NOT NULL,
        "commit"         TEXT    NOT NULL,
        state            TEXT    NOT NULL CHECK (state IN ('pending', 'success', 'failure', 'error')),
        description      TEXT    NOT NULL,
        context          TEXT    NOT NULL,
        target_url       TEXT,
        created_at       INTEGER NOT NULL,
        attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        next_attempt_at  INTEGER,
        last_error       TEXT,
        delivered_at     INTEGER,
        CHECK (delivered_at IS NULL OR next_attempt_at IS NULL),
        CHECK (next_attempt_at IS NOT NULL OR delivered_at IS NOT NULL OR last_error IS NOT NULL)
      ) STRICT;
      CREATE INDEX status_outbox_open ON status_outbox (reporter, "commit", id) WHERE next_attempt_at IS NOT NULL;
      CREATE INDEX status_outbox_finished ON status_outbox (id) WHERE next_attempt_at IS NULL;
    `,
  },
  {
    version: 4,
    name: 'component inputs (the configuration and bound values a component was started with)',
    // JSON object of placeholder → value, so a dry run can say which value changed; NULL when it has none.
    sql: `ALTER TABLE components ADD COLUMN inputs TEXT;`,
  },
  {
    version: 5,
    name: 'composite rollback: the last healthy spec of grouped components, and the groups a revision could not update',
    // spec: the resolved unit as JSON (recipe, dependencies, hash) the last time it started healthy in an apply, kept
    // only for the units a composite's rollback may restore (members, replicas, binds to them); read apart from the row.
    // group_rollbacks: a group rolled back for a revision stays at its previous members while that revision is applied
    // again (an agent restart must not retry, and so restart, a healthy composite); any other revision clears it.
    sql: `
      ALTER TABLE components ADD COLUMN spec TEXT;
      CREATE TABLE group_rollbacks (
        grp       TEXT    PRIMARY KEY,
        revision  TEXT    NOT NULL,
        at        INTEGER NOT NULL
      ) STRICT;
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

/**
 * Brings the database to SCHEMA_VERSION. The version is read inside the same IMMEDIATE transaction that
 * applies the pending migrations, so two agents opening one fresh directory at once migrate it once.
 * Returns the versions applied now (empty when it was already current).
 */
export function migrate(db: Database, now: number, migrations: readonly Migration[] = MIGRATIONS): number[] {
  checkMigrationList(migrations);
  const latest = migrations.at(-1)?.version ?? 0;
  const run = db.transaction((): number[] => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version     INTEGER PRIMARY KEY,
      name        TEXT    NOT NULL,
      applied_at  INTEGER NOT NULL
    ) STRICT`);
    const row = db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null };
    const current = row.v ?? 0;
    if (current > latest)
      throw new StateStoreError(
        'KS_STATE_SCHEMA_TOO_NEW',
        `the state database has schema version ${current}, newer than this agent knows (${latest}): it was written by a newer Keystone; upgrade the agent instead of downgrading`,
      );
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const applied: number[] = [];
    for (const m of migrations) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, now);
      applied.push(m.version);
    }
    return applied;
  });
  return run.immediate();
}

/** Versions 1..n, each once, in order: a gap or a duplicate is a programming error caught at open. */
function checkMigrationList(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`state-store migration #${i} has version ${m.version}, expected ${i + 1}`);
  });
}

// ---- row shapes: the same schemas check what is written and what is read back ----

export const COMPONENT_STATES = ['installing', 'starting', 'running', 'unhealthy', 'backoff', 'crash-looping', 'failed', 'stopping', 'stopped'] as const;

const ms = z.int().nonnegative();
const text = z.string().min(1);
const dependencySchema = z.object({ component: text, type: z.enum(['hard', 'ordering']) });
export const instanceSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('process'), pid: z.int().positive(), startTime: text }),
  z.object({ kind: z.literal('container'), id: text }),
]);
export const timeSchema = ms;
export const stateSchema = z.enum(COMPONENT_STATES);
const outcomeSchema = z.enum(['success', 'failure', 'rejected']);

export const componentSchema: z.ZodType<ComponentRecord> = z
  .object({
    name: text,
    hash: text,
    version: text,
    runtime: z.enum(['process', 'container']),
    position: z.int(),
    dependencies: z.array(dependencySchema),
    instance: instanceSchema.optional(),
    state: stateSchema,
    restarts: z.int().nonnegative(),
    healthySince: ms.optional(),
    held: z.boolean(),
    reason: z.string().optional(),
    since: ms,
    revision: z.string().optional(),
    inputs: z.record(z.string(), z.string()).optional(),
  })
  .refine((c) => !c.instance || c.instance.kind === c.runtime, { message: 'the instance kind differs from the runtime', path: ['instance', 'kind'] });

export const revisionSchema: z.ZodType<AppliedRevision> = z
  .object({ id: text, source: text, planFile: z.string(), signedAt: z.int().nonnegative().optional(), unsigned: z.boolean(), appliedAt: ms })
  .refine((r) => r.unsigned === (r.signedAt === undefined), { message: 'signedAt must be given exactly when the revision is signed', path: ['signedAt'] });

const reconcileSchema: z.ZodType<ApplyReconcile> = z.object({
  stopOrder: z.array(z.string()),
  startOrder: z.array(z.string()),
  noTouch: z.array(z.string()),
  reasons: z.record(z.string(), z.string()),
});
const failedSchema: z.ZodType<ApplyFailure[]> = z.array(z.object({ name: text, reason: z.string() }));

export const historySchema: z.ZodType<HistoryEntry> = z.object({
  id: z.int().positive(),
  revision: z.string(),
  planFile: z.string(),
  startedAt: ms,
  reconcile: reconcileSchema.optional(),
  finishedAt: ms.optional(),
  outcome: outcomeSchema.optional(),
  summary: z.string().optional(),
  failed: failedSchema,
});

export const applyStartSchema = z.object({ revision: z.string(), planFile: z.string(), startedAt: ms, reconcile: reconcileSchema });
export const applyFinishSchema = z.object({ finishedAt: ms, outcome: outcomeSchema, summary: z.string(), failed: failedSchema.optional() });
export const rejectedSchema = z.object({ revision: z.string(), planFile: z.string(), at: ms, reason: z.string() });
export const historyQuerySchema = z.object({ limit: z.int().positive(), before: z.int().optional() });

function describe(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') : 'value'}: ${i.message}`).join('; ');
}

/** Validates a value before it is written: KS_STATE_INVALID naming `what` and the offending field. */
export function checked<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new StateStoreError('KS_STATE_INVALID', `${what}: ${describe(r.error)}`);
  return r.data;
}

/** Drops undefined members so read-back records have exactly the keys that were set. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** 0/1 to a boolean; anything else passes through for the schema to reject. */
function bool(v: unknown): unknown {
  return v === 0 ? false : v === 1 ? true : v;
}

export type Row = Record<string, unknown>;

/** Turns rows into records, or throws KS_STATE_CORRUPT naming the file, the table row and the column. */
export class RowReader {
  constructor(private readonly file: string) {}

  corrupt(what: string, detail: string): StateStoreError {
    return new StateStoreError('KS_STATE_CORRUPT', `${this.file}: ${what} is corrupt: ${detail}`);
  }

  component(row: Row): ComponentRecord {
    const what = `components row ${JSON.stringify(row.name)}`;
    return this.decode(componentSchema, what, {
      name: row.name,
      hash: row.hash,
      version: row.version,
      runtime: row.runtime,
      position: row.position,
      dependencies: this.json(row, 'dependencies', what) ?? row.dependencies,
      instance: this.json(row, 'instance', what),
      state: row.state,
      restarts: row.restarts,
      healthySince: row.healthy_since ?? undefined,
      held: bool(row.held),
      reason: row.reason ?? undefined,
      since: row.since,
      revision: row.revision ?? undefined,
      inputs: row.inputs == null ? undefined : this.json(row, 'inputs', what),
    });
  }

  revision(row: Row): AppliedRevision {
    return this.decode(revisionSchema, 'applied_revision row', {
      id: row.id,
      source: row.source,
      planFile: row.plan_file,
      signedAt: row.signed_at ?? undefined,
      unsigned: bool(row.unsigned),
      appliedAt: row.applied_at,
    });
  }

  history(row: Row): HistoryEntry {
    const what = `applies row ${String(row.id)}`;
    return this.decode(historySchema, what, {
      id: row.id,
      revision: row.revision,
      planFile: row.plan_file,
      startedAt: row.started_at,
      reconcile: this.json(row, 'reconcile', what),
      finishedAt: row.finished_at ?? undefined,
      outcome: row.outcome ?? undefined,
      summary: row.summary ?? undefined,
      failed: this.json(row, 'failed', what) ?? [],
    });
  }

  private json(row: Row, column: string, what: string): unknown {
    const v = row[column];
    if (v === null || v === undefined) return undefined;
    if (typeof v !== 'string') throw this.corrupt(what, `${column}: expected JSON text, found ${typeof v}`);
    try {
      return JSON.parse(v) as unknown;
    } catch (e) {
      throw this.corrupt(what, `${column}: not valid JSON (${(e as Error).message})`);
    }
  }

  private decode<T extends object>(schema: z.ZodType<T>, what: string, value: object): T {
    const r = schema.safeParse(defined(value));
    if (!r.success) throw this.corrupt(what, describe(r.error));
    return defined(r.data);
  }
}
