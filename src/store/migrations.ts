// What the state store keeps on disk: the tables and their numbered migrations, each applied once, in one
// transaction, when the store is opened.
import type { Database } from 'better-sqlite3';
import { StateStoreError } from './state-store-error.js';

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
  {
    version: 6,
    name: 'fleets: the target a revision was applied for, and the fields a commit status carries',
    // target: the fleet.toml target the plan came from (SPEC §13), NULL for --plan and for revisions before fleets.
    // fields: a status's key=value fields as a JSON object (target, wave), NULL when it has none.
    sql: `
      ALTER TABLE applied_revision ADD COLUMN target TEXT;
      ALTER TABLE applies ADD COLUMN target TEXT;
      ALTER TABLE status_outbox ADD COLUMN fields TEXT;
    `,
  },
  {
    version: 7,
    name: 'fleets: the device identity (name, labels, --plan) a revision was applied with',
    // A migration once committed is never edited: state databases at version 6 exist.
    sql: `ALTER TABLE applied_revision ADD COLUMN identity TEXT;`,
  },
  {
    version: 8,
    name: 'rollouts: the rollout ref a status carries, the first success seen of a wave, the plans that ran well here',
    // rollout: JSON {wave, state, keep} of a status (SPEC §14), NULL when the fleet has no [rollout].
    // rollout_observations: when this device first saw, for a commit, a success of a wave (wave = its name) or a wave
    // with no device known in it (wave = `empty:<name>`), on the Git host's clock: the bake and an empty wave's turn
    // are measured from it, and an agent restarted mid-rollout keeps its place.
    // good_states: digests of the desired states this device applied successfully (a revert to one is not held).
    sql: `
      ALTER TABLE status_outbox ADD COLUMN rollout TEXT;
      CREATE TABLE rollout_observations (
        revision          TEXT    NOT NULL,
        wave              TEXT    NOT NULL,
        first_success_at  INTEGER NOT NULL,
        recorded_at       INTEGER NOT NULL,
        PRIMARY KEY (revision, wave)
      ) STRICT;
      CREATE TABLE good_states (
        digest    TEXT    PRIMARY KEY,
        revision  TEXT    NOT NULL,
        at        INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 9,
    name: 'rollouts: the commits held at the gate, so that a restarted agent holds them again',
    // position 0 is the newest.
    sql: `
      CREATE TABLE rollout_holds (
        revision  TEXT    PRIMARY KEY,
        position  INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 10,
    name: 'the dashboard: the last exit of each component; the signers and wave of the applied revision',
    // JSON: {"code":1,"signal":null,"at":ms} and ["key id", …].
    sql: `
      ALTER TABLE components ADD COLUMN last_exit TEXT;
      ALTER TABLE applied_revision ADD COLUMN signers TEXT;
      ALTER TABLE applied_revision ADD COLUMN wave TEXT;
    `,
  },
  {
    version: 11,
    name: 'outcomes across restarts: a recovery is its own history entry',
    // SQLite cannot change a CHECK in place: the table is copied into one that also admits `recovered` (SPEC §5: a
    // failed apply whose components became healthy later stays failed; the recovery is written beside it).
    sql: `
      CREATE TABLE applies_v11 (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        revision     TEXT    NOT NULL,
        plan_file    TEXT    NOT NULL,
        started_at   INTEGER NOT NULL,
        reconcile    TEXT,
        finished_at  INTEGER,
        outcome      TEXT    CHECK (outcome IN ('success', 'failure', 'rejected', 'recovered')),
        summary      TEXT,
        failed       TEXT,
        target       TEXT,
        CHECK ((finished_at IS NULL) = (outcome IS NULL))
      ) STRICT;
      INSERT INTO applies_v11 (id, revision, plan_file, started_at, reconcile, finished_at, outcome, summary, failed, target)
        SELECT id, revision, plan_file, started_at, reconcile, finished_at, outcome, summary, failed, target FROM applies;
      DROP TABLE applies;
      ALTER TABLE applies_v11 RENAME TO applies;
      CREATE INDEX applies_unfinished ON applies (id) WHERE finished_at IS NULL;
      -- A revision's own rows, however much history came after (outcomes.ts asks how a revision stood here).
      CREATE INDEX applies_revision ON applies (revision, id);
    `,
  },
  {
    version: 12,
    name: 'reports that say more: the details a commit status carries',
    // details: JSON {agent, health, log} of a status (SPEC §8), NULL for rows enqueued before (they go without).
    sql: `ALTER TABLE status_outbox ADD COLUMN details TEXT;`,
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
