// The durable state of SPEC §5 against real SQLite files in temporary directories (no mocks), including a
// writer killed with SIGKILL in the middle of its write loop. Every case runs twice (the killed writer, a child
// process, always on node_modules' build): on node_modules' SQLite (what
// `npm ci` builds) and on the package's lean one (what devices run: packaging/sqlite-addon-build.mjs leaves out
// full-text search, R-trees, the JSON and math functions…), so that a query or a migration reaching for something
// the lean build lacks fails here, not on a device.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostArch } from '../../packaging/deb-arch.mjs';
import { sqliteAddon } from '../../packaging/sqlite-addon-build.mjs';
import { diff, type Reconcile } from '../../src/core/diff.js';
import { migrate, MIGRATIONS } from '../../src/store/migrations.js';
import {
  COMPONENT_STATES,
  openStateStore,
  SCHEMA_VERSION,
  StateStoreError,
  type AppliedRevision,
  type ComponentRecord,
  type ComponentState,
  type StateStore,
  type StateStoreOptions,
} from '../../src/store/state-store.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';

const dirs: string[] = [];
const open: Array<StateStore | Sqlite.Database> = [];

afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'keystone-state-'));
  dirs.push(d);
  return d;
}

/** The addon the cases below open their stores with; undefined: node_modules' (better-sqlite3's own lookup). */
let binding: string | undefined;

function store(dir: string, opts?: StateStoreOptions): StateStore {
  const s = openStateStore(dir, { nativeBinding: binding, ...opts });
  open.push(s);
  return s;
}

/** A second, plain connection to the same file: what an operator's sqlite3 shell (or a disk fault) would do. */
function raw(dir: string): Sqlite.Database {
  // The same SQLite build as the store's: two builds on one open file would be two lock implementations.
  const db = new Sqlite(join(dir, 'state.db'), binding ? { nativeBinding: binding } : {});
  open.push(db);
  return db;
}

function clock(start = 1_000): { now: () => number; set: (t: number) => void } {
  let t = start;
  return { now: () => t, set: (v) => (t = v) };
}

function rec(name: string, over: Partial<ComponentRecord> = {}): ComponentRecord {
  return {
    name,
    hash: `v1:sha256:${name}`,
    version: '1.0.0',
    runtime: 'process',
    position: 0,
    dependencies: [],
    state: 'running',
    restarts: 0,
    held: false,
    since: 500,
    ...over,
  };
}

function thrown(fn: () => unknown): StateStoreError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StateStoreError);
    return e as StateStoreError;
  }
  throw new Error('expected a StateStoreError, nothing was thrown');
}

const RECONCILE = {
  stopOrder: ['web', 'api'],
  startOrder: ['api', 'web'],
  noTouch: ['influxdb', 'telemetry'],
  reasons: { api: 'version 1.0.0 → 1.1.0', web: 'hard dependency api restarts' },
};

// node-gyp needs make and python3 beside g++, and the npm registry for Node's headers (not checked: npm ci needed it).
const lean = needs('g++', 'python3');
const SQLITES = [
  { title: "on node_modules' SQLite", skip: false, addon: (): string | undefined => undefined },
  {
    title: lean.title("on the package's lean SQLite"),
    skip: lean.skip,
    // Compiled here for this Node's ABI once (about a minute), then taken from the build cache.
    addon: (): string | undefined => {
      const runtime = JSON.parse(readFileSync(join(PROJECT_ROOT, 'packaging', 'node-runtime.json'), 'utf8'));
      return sqliteAddon(hostArch(), process.versions.modules, runtime);
    },
  },
];

for (const sqlite of SQLITES) {
  describe.skipIf(sqlite.skip)(sqlite.title, () => {
    beforeAll(() => {
      binding = sqlite.addon();
    }, 10 * 60_000);
    afterAll(() => {
      binding = undefined;
    });

    describe('opening', () => {
      it('creates the directory 0700 and a 0600 database in WAL mode', () => {
        const dir = join(tempDir(), 'nested', 'state');
        const s = store(dir);
        expect(s.path).toBe(join(dir, 'state.db'));
        expect(statSync(dir).mode & 0o777).toBe(0o700);
        expect(statSync(s.path).mode & 0o777).toBe(0o600);
        expect(raw(dir).pragma('journal_mode', { simple: true })).toBe('wal');
      });

      it('runs each migration once; reopening is idempotent and keeps the data', () => {
        const dir = tempDir();
        const s1 = store(dir, { now: () => 111 });
        s1.upsertComponent(rec('api'));
        s1.close();
        const s2 = store(dir, { now: () => 222 });
        expect(s2.component('api')).toEqual(rec('api'));
        s2.close();
        const rows = raw(dir).prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all();
        expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, applied_at: 111 })));
        expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
      });

      it('applies a later migration to an existing database, and rolls back one that fails', () => {
        const dir = tempDir();
        store(dir).upsertComponent(rec('api'));
        const db = raw(dir);
        const bad = [
          ...MIGRATIONS,
          {
            version: SCHEMA_VERSION + 1,
            name: 'broken',
            sql: 'CREATE TABLE outbox (id INTEGER PRIMARY KEY); SELECT * FROM no_such_table;',
          },
        ];
        expect(() => migrate(db, 5, bad)).toThrow(/no_such_table/);
        expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'outbox'").pluck().get()).toBe(0);
        expect(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(SCHEMA_VERSION);

        const good = [
          ...MIGRATIONS,
          {
            version: SCHEMA_VERSION + 1,
            name: 'outbox',
            sql: 'CREATE TABLE outbox (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;',
          },
        ];
        expect(migrate(db, 6, good)).toEqual([SCHEMA_VERSION + 1]);
        expect(migrate(db, 7, good)).toEqual([]);
        expect(db.prepare('SELECT name FROM components').pluck().all()).toEqual(['api']);
      });

      it('refuses a database migrated by a newer agent', () => {
        const dir = tempDir();
        store(dir).close();
        raw(dir)
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(SCHEMA_VERSION + 1, 'future', 1);
        const e = thrown(() => openStateStore(dir));
        expect(e.code).toBe('KS_STATE_SCHEMA_TOO_NEW');
        expect(e.message).toMatch(/newer/);
      });

      it('refuses a file that is no database, naming it', () => {
        const dir = tempDir();
        writeFileSync(
          join(dir, 'state.db'),
          'this is not sqlite, just some bytes that are long enough to have a header'.repeat(20),
        );
        const e = thrown(() => openStateStore(dir));
        expect(e.code).toBe('KS_STATE_CORRUPT');
        expect(e.message).toContain(join(dir, 'state.db'));
      });

      it('refuses a state directory that is a file', () => {
        const file = join(tempDir(), 'plain-file');
        writeFileSync(file, '');
        const e = thrown(() => openStateStore(file));
        expect(e.code).toBe('KS_STATE_OPEN_FAILED');
        expect(e.message).toContain(`state directory ${file}: `);
      });
    });

    describe('applied revision and replay floor', () => {
      const signed = (id: string, signedAt: number, appliedAt = signedAt * 1000): AppliedRevision => ({
        id,
        source: 'git:main',
        planFile: 'plans/edge.toml',
        signedAt,
        unsigned: false,
        appliedAt,
      });
      const unsigned = (id: string): AppliedRevision => ({
        id,
        source: 'dir:/srv/repo',
        planFile: 'plans/edge.toml',
        unsigned: true,
        appliedAt: 9_000_000,
      });

      it('round-trips, signed and unsigned', () => {
        const s = store(tempDir());
        expect(s.appliedRevision()).toBeUndefined();
        expect(s.lastSignedAt()).toBeUndefined();
        s.setAppliedRevision(signed('abc', 1_700_000_000));
        expect(s.appliedRevision()).toStrictEqual(signed('abc', 1_700_000_000));
        s.setAppliedRevision(unsigned('dev'));
        expect(s.appliedRevision()).toStrictEqual(unsigned('dev'));
      });

      it('never lowers the replay floor: not by an unsigned revision, an older signature, or a reopen', () => {
        const dir = tempDir();
        const s = store(dir);
        const floors: Array<number | undefined> = [];
        for (const r of [unsigned('u0'), signed('a', 100), signed('b', 200), unsigned('u1'), signed('c', 150)]) {
          s.setAppliedRevision(r);
          floors.push(s.lastSignedAt());
        }
        expect(floors).toEqual([undefined, 100, 200, 200, 200]);
        expect(s.appliedRevision()?.id).toBe('c');
        s.close();
        expect(store(dir).lastSignedAt()).toBe(200);
      });

      it('refuses a signed time on an unsigned revision and a signed one without it', () => {
        const s = store(tempDir());
        expect(thrown(() => s.setAppliedRevision({ ...unsigned('u'), signedAt: 5 })).code).toBe('KS_STATE_INVALID');
        expect(thrown(() => s.setAppliedRevision({ ...signed('s', 5), signedAt: undefined })).code).toBe(
          'KS_STATE_INVALID',
        );
        expect(s.appliedRevision()).toBeUndefined();
      });
    });

    describe('sync suspension', () => {
      it('is absent by default, survives a reopen, and clears on resume', () => {
        const dir = tempDir();
        const a = store(dir);
        expect(a.syncSuspension()).toBeUndefined();
        a.setSyncSuspension({
          since: 1_700_000_000_000,
          revision: 'manual:0123456789ab',
          reason: 'a forced manual apply',
        });
        a.close();
        const b = store(dir);
        expect(b.syncSuspension()).toStrictEqual({
          since: 1_700_000_000_000,
          revision: 'manual:0123456789ab',
          reason: 'a forced manual apply',
        });
        b.setSyncSuspension(undefined);
        expect(b.syncSuspension()).toBeUndefined();
      });

      it('refuses an incomplete suspension', () => {
        const s = store(tempDir());
        expect(() => s.setSyncSuspension({ since: 1, revision: '', reason: 'x' })).toThrow(/revision/);
        expect(s.syncSuspension()).toBeUndefined();
      });
    });

    describe('component records', () => {
      it('round-trip every field, in position order with ties by name', () => {
        const s = store(tempDir());
        const full = rec('api', {
          position: 2,
          dependencies: [
            { component: 'influxdb', type: 'hard' },
            { component: 'telemetry', type: 'ordering' },
          ],
          instance: { kind: 'process', pid: 41088, startTime: '123456789' },
          state: 'backoff',
          restarts: 3,
          healthySince: 1_700,
          held: true,
          reason: 'exited with code 1',
          since: 1_800,
          revision: 'rev-7',
        });
        const container = rec('cache', {
          runtime: 'container',
          position: 2,
          instance: { kind: 'container', id: 'c0ffee' },
        });
        s.upsertComponent(full);
        s.upsertComponent(rec('web', { position: 3 }));
        s.upsertComponent(container);
        s.upsertComponent(rec('influxdb', { position: 1 }));
        expect(s.component('api')).toStrictEqual(full);
        expect(s.component('cache')).toStrictEqual(container);
        expect(s.component('nope')).toBeUndefined();
        expect(s.components().map((c) => c.name)).toEqual(['influxdb', 'api', 'cache', 'web']);
      });

      it('upsert replaces the whole record; remove says whether there was one', () => {
        const s = store(tempDir());
        s.upsertComponent(rec('api', { reason: 'old', instance: { kind: 'process', pid: 1, startTime: '1' } }));
        s.upsertComponent(rec('api', { version: '1.1.0' }));
        expect(s.component('api')).toStrictEqual(rec('api', { version: '1.1.0' }));
        expect(s.removeComponent('api')).toBe(true);
        expect(s.removeComponent('api')).toBe(false);
        expect(s.components()).toEqual([]);
      });

      it('stores only the dependency fields it knows and refuses invalid records', () => {
        const s = store(tempDir());
        const extra = {
          component: 'db',
          type: 'hard',
          version: '^1',
        } as unknown as ComponentRecord['dependencies'][number];
        s.upsertComponent(rec('api', { dependencies: [extra] }));
        expect(s.component('api')?.dependencies).toStrictEqual([{ component: 'db', type: 'hard' }]);
        const bad: Array<[Partial<ComponentRecord>, RegExp]> = [
          [{ state: 'sleeping' as ComponentState }, /state/],
          [{ restarts: -1 }, /restarts/],
          [{ position: 1.5 }, /position/],
          [{ instance: { kind: 'container', id: 'x' } }, /instance/],
          [{ dependencies: [{ component: 'db', type: 'soft' as 'hard' }] }, /dependencies\.0\.type/],
        ];
        for (const [over, msg] of bad) {
          const e = thrown(() => s.upsertComponent(rec('bad', over)));
          expect(e.code).toBe('KS_STATE_INVALID');
          expect(e.message).toMatch(msg);
        }
        expect(s.component('bad')).toBeUndefined();
      });

      it('supervisor writes change only what they name', () => {
        const c = clock(10_000);
        const s = store(tempDir(), c);
        s.upsertComponent(rec('api', { state: 'installing', restarts: 2, healthySince: 50, reason: 'pulling' }));

        s.recordStart('api', { kind: 'process', pid: 4242, startTime: '99887766' }, 9_000);
        expect(s.component('api')).toStrictEqual(
          rec('api', {
            state: 'starting',
            restarts: 2,
            since: 9_000,
            instance: { kind: 'process', pid: 4242, startTime: '99887766' },
          }),
        );

        c.set(11_000);
        s.recordState('api', 'running');
        c.set(12_000);
        s.recordState('api', 'running', 'still fine');
        expect(s.component('api')).toMatchObject({ state: 'running', since: 11_000, reason: 'still fine' });
        s.recordState('api', 'unhealthy');
        expect(s.component('api')).toMatchObject({ state: 'unhealthy', since: 12_000 });
        expect(s.component('api')?.reason).toBeUndefined();

        expect(s.recordRestart('api')).toBe(3);
        expect(s.recordRestart('api')).toBe(4);
        s.recordHealthy('api', 12_500);
        expect(s.component('api')).toMatchObject({ restarts: 4, healthySince: 12_500 });
        s.resetRestarts('api');
        s.recordHeld('api', true);
        expect(s.component('api')).toMatchObject({ restarts: 0, healthySince: 12_500, held: true });
        s.recordState('api', 'crash-looping', 'crash-looping after 10 restarts');
        expect(s.component('api')).toMatchObject({
          state: 'crash-looping',
          reason: 'crash-looping after 10 restarts',
          instance: { pid: 4242 },
        });
      });

      it('named writes to an unknown component or with a wrong instance kind throw', () => {
        const s = store(tempDir());
        s.upsertComponent(rec('api'));
        const ref = { kind: 'process', pid: 1, startTime: '1' } as const;
        for (const write of [
          () => s.recordStart('ghost', ref, 1),
          () => s.recordState('ghost', 'running'),
          () => s.recordRestart('ghost'),
          () => s.recordHealthy('ghost', 1),
          () => s.resetRestarts('ghost'),
          () => s.recordHeld('ghost', true),
        ]) {
          const e = thrown(write);
          expect(e.code).toBe('KS_STATE_NOT_FOUND');
          expect(e.message).toContain('"ghost"');
        }
        expect(thrown(() => s.recordStart('api', { kind: 'container', id: 'abc' }, 1)).code).toBe('KS_STATE_INVALID');
        expect(thrown(() => s.recordStart('api', { kind: 'process', pid: 0, startTime: '1' }, 1)).code).toBe(
          'KS_STATE_INVALID',
        );
        expect(thrown(() => s.recordState('api', 'paused' as ComponentState)).code).toBe('KS_STATE_INVALID');
      });
    });

    describe('actualState', () => {
      const RUNNING: Record<ComponentState, boolean> = {
        installing: true,
        starting: true,
        running: true,
        unhealthy: true,
        backoff: true,
        'crash-looping': false,
        failed: false,
        stopping: false,
        stopped: false,
      };

      it('maps every state to running and held, in position order', () => {
        const s = store(tempDir());
        COMPONENT_STATES.forEach((state, i) =>
          s.upsertComponent(rec(state, { state, position: COMPONENT_STATES.length - i })),
        );
        s.upsertComponent(
          rec('held-stopped', {
            state: 'stopped',
            held: true,
            position: 100,
            dependencies: [{ component: 'running', type: 'hard' }],
          }),
        );
        const actual = s.actualState();
        expect(actual.components.map((a) => a.name)).toEqual([...[...COMPONENT_STATES].reverse(), 'held-stopped']);
        for (const state of COMPONENT_STATES)
          expect(
            actual.components.find((a) => a.name === state),
            state,
          ).toStrictEqual({
            name: state,
            hash: `v1:sha256:${state}`,
            version: '1.0.0',
            running: RUNNING[state],
            held: state === 'crash-looping',
            dependencies: [],
          });
        expect(actual.components.at(-1)).toMatchObject({
          running: false,
          held: true,
          dependencies: [{ component: 'running', type: 'hard' }],
        });
      });

      it('is what the diff consumes', () => {
        const s = store(tempDir());
        const empty = { planFile: 'plans/edge.toml', components: [], layers: [], startOrder: [] };
        s.upsertComponent(rec('old'));
        const r: Reconcile = diff(empty, s.actualState());
        expect(r.stopOrder).toEqual(['old']);
      });
    });

    describe('apply history', () => {
      it('round-trips an apply, keeping only the documented reconcile fields', () => {
        const s = store(tempDir());
        const reconcile: Reconcile = { ...RECONCILE, layers: [['api'], ['web']], reasonCodes: {} };
        const id = s.beginApply({ revision: 'rev-2', planFile: 'plans/edge.toml', startedAt: 1_000, reconcile });
        expect(s.history({ limit: 10 })).toStrictEqual([
          { id, revision: 'rev-2', planFile: 'plans/edge.toml', startedAt: 1_000, reconcile: RECONCILE, failed: [] },
        ]);
        const failed = [{ name: 'web', reason: 'not healthy within 30s' }];
        s.finishApply(id, { finishedAt: 2_000, outcome: 'failure', summary: '1 of 2 components failed', failed });
        expect(s.history({ limit: 10 })[0]).toStrictEqual({
          id,
          revision: 'rev-2',
          planFile: 'plans/edge.toml',
          startedAt: 1_000,
          reconcile: RECONCILE,
          finishedAt: 2_000,
          outcome: 'failure',
          summary: '1 of 2 components failed',
          failed,
        });
        expect(s.unfinishedApply()).toBeUndefined();
        const again = thrown(() => s.finishApply(id, { finishedAt: 3_000, outcome: 'success', summary: 'x' }));
        expect(again.code).toBe('KS_STATE_NOT_FOUND');
        expect(thrown(() => s.finishApply(999, { finishedAt: 3_000, outcome: 'success', summary: 'x' })).code).toBe(
          'KS_STATE_NOT_FOUND',
        );
      });

      it('records a rejected revision with its reason', () => {
        const s = store(tempDir());
        const id = s.recordRejected({
          revision: 'rev-3',
          planFile: 'plans/edge.toml',
          at: 5_000,
          reason: 'KS_UNSIGNED: no signature',
        });
        expect(s.history({ limit: 1 })).toStrictEqual([
          {
            id,
            revision: 'rev-3',
            planFile: 'plans/edge.toml',
            startedAt: 5_000,
            finishedAt: 5_000,
            outcome: 'rejected',
            summary: 'KS_UNSIGNED: no signature',
            failed: [],
          },
        ]);
        const begun = s.beginApply({ revision: 'rev-4', planFile: 'p', startedAt: 6_000, reconcile: RECONCILE });
        s.finishApply(begun, { finishedAt: 6_001, outcome: 'rejected', summary: 'replayed' });
        expect(s.history({ limit: 1 })[0]).toMatchObject({ outcome: 'rejected', summary: 'replayed' });
      });

      it('pages newest first with before', () => {
        const s = store(tempDir());
        const ids: number[] = [];
        for (let i = 0; i < 25; i++) {
          const id = s.beginApply({ revision: `rev-${i}`, planFile: 'p', startedAt: i, reconcile: RECONCILE });
          s.finishApply(id, { finishedAt: i + 1, outcome: 'success', summary: 'ok' });
          ids.push(id);
        }
        const newest = [...ids].reverse();
        const pages: number[][] = [];
        let before: number | undefined;
        for (;;) {
          const page = s.history(before === undefined ? { limit: 10 } : { limit: 10, before });
          if (!page.length) break;
          pages.push(page.map((h) => h.id));
          before = page.at(-1)!.id;
        }
        expect(pages).toEqual([newest.slice(0, 10), newest.slice(10, 20), newest.slice(20)]);
        expect(s.history({ limit: 3, before: ids[5]! }).map((h) => h.revision)).toEqual(['rev-4', 'rev-3', 'rev-2']);
        expect(thrown(() => s.history({ limit: 0 })).code).toBe('KS_STATE_INVALID');
      });

      it('prunes finished entries beyond the retention, never an unfinished one, and never reuses ids', () => {
        const s = store(tempDir(), { historyRetention: 3 });
        const interrupted = s.beginApply({ revision: 'killed', planFile: 'p', startedAt: 0, reconcile: RECONCILE });
        let last = interrupted;
        for (let i = 1; i <= 6; i++)
          last = s.recordRejected({ revision: `r${i}`, planFile: 'p', at: i, reason: 'bad' });
        expect(s.history({ limit: 100 }).map((h) => h.revision)).toEqual(['r6', 'r5', 'r4', 'killed']);
        expect(s.unfinishedApply()?.id).toBe(interrupted);
        s.finishApply(interrupted, { finishedAt: 7, outcome: 'failure', summary: 'interrupted' });
        expect(s.recordRejected({ revision: 'r7', planFile: 'p', at: 8, reason: 'bad' })).toBe(last + 1);
        expect(s.history({ limit: 100 }).map((h) => h.revision)).toEqual(['r7', 'r6', 'r5']);
      });

      it('reports an apply the agent never finished after a reopen, newest first', () => {
        const dir = tempDir();
        const s1 = store(dir);
        const older = s1.beginApply({ revision: 'rev-a', planFile: 'p', startedAt: 1, reconcile: RECONCILE });
        const newer = s1.beginApply({ revision: 'rev-b', planFile: 'p', startedAt: 2, reconcile: RECONCILE });
        s1.close();
        const s2 = store(dir);
        expect(s2.unfinishedApply()).toMatchObject({ id: newer, revision: 'rev-b', reconcile: RECONCILE });
        expect(s2.unfinishedApply()?.finishedAt).toBeUndefined();
        s2.finishApply(newer, {
          finishedAt: 3,
          outcome: 'failure',
          summary: 'interrupted: the agent stopped during the apply',
        });
        expect(s2.unfinishedApply()?.id).toBe(older);
        s2.finishApply(older, { finishedAt: 3, outcome: 'failure', summary: 'interrupted' });
        expect(s2.unfinishedApply()).toBeUndefined();
      });
    });

    describe('transactions', () => {
      it('commits together, rolls back together, nests as a savepoint and refuses async functions', () => {
        const s = store(tempDir());
        expect(
          s.transaction(() => {
            s.upsertComponent(rec('a'));
            s.upsertComponent(rec('b'));
            return 2;
          }),
        ).toBe(2);
        expect(() =>
          s.transaction(() => {
            s.upsertComponent(rec('c'));
            s.recordRestart('a');
            throw new Error('boom');
          }),
        ).toThrow('boom');
        expect(s.components().map((c) => [c.name, c.restarts])).toEqual([
          ['a', 0],
          ['b', 0],
        ]);
        s.transaction(() => {
          s.removeComponent('a');
          expect(() =>
            s.transaction(() => {
              s.removeComponent('b');
              throw new Error('inner');
            }),
          ).toThrow('inner');
        });
        expect(s.components().map((c) => c.name)).toEqual(['b']);
        expect(() => s.transaction(async () => s.removeComponent('b'))).toThrow(/promise/);
        expect(s.components().map((c) => c.name)).toEqual(['b']);
      });
    });

    describe('two stores on one directory', () => {
      it('both open (the second does not migrate again) and each reads what the other wrote', () => {
        const dir = tempDir();
        const a = store(dir);
        const b = store(dir);
        a.upsertComponent(rec('api'));
        a.setAppliedRevision({ id: 'r1', source: 's', planFile: 'p', signedAt: 10, unsigned: false, appliedAt: 1 });
        expect(b.component('api')).toStrictEqual(rec('api'));
        expect(b.lastSignedAt()).toBe(10);
        b.recordRestart('api');
        expect(a.component('api')?.restarts).toBe(1);
        expect(a.components()).toStrictEqual(b.components());
        expect(raw(dir).prepare('SELECT count(*) FROM schema_migrations').pluck().get()).toBe(SCHEMA_VERSION);
      });
    });

    describe('the read cache', () => {
      it("serves repeated reads without going stale: own writes, another connection's writes, a rolled-back transaction", () => {
        const dir = tempDir();
        const a = store(dir);
        const b = store(dir);
        a.upsertComponent(rec('api'));
        expect(a.component('api')?.state).toBe(rec('api').state);
        a.recordState('api', 'running');
        expect(a.component('api')?.state).toBe('running');
        // Another connection's commit, after `a` cached the row.
        b.recordState('api', 'unhealthy', 'probe failed');
        expect(a.component('api')).toMatchObject({ state: 'unhealthy', reason: 'probe failed' });
        raw(dir).prepare("UPDATE components SET restarts = 5 WHERE name = 'api'").run();
        expect(a.components()[0]?.restarts).toBe(5);
        expect(() =>
          a.transaction(() => {
            a.recordState('api', 'failed');
            expect(a.component('api')?.state).toBe('failed');
            throw new Error('roll back');
          }),
        ).toThrow('roll back');
        expect(a.component('api')?.state).toBe('unhealthy');
      });

      it('hands out frozen records, so no caller can change what the next one reads', () => {
        const s = store(tempDir());
        s.upsertComponent(rec('api', { dependencies: [{ component: 'db', type: 'hard' }] }));
        const r = s.component('api')!;
        expect(() => ((r as { state: string }).state = 'running')).toThrow(TypeError);
        expect(() => (r.dependencies as unknown[]).push({})).toThrow(TypeError);
        expect(s.component('api')).toStrictEqual(rec('api', { dependencies: [{ component: 'db', type: 'hard' }] }));
      });
    });

    describe('corrupt rows', () => {
      function corrupted(sql: string, ...params: unknown[]): StateStore {
        const dir = tempDir();
        const s = store(dir);
        s.upsertComponent(rec('influxdb', { position: 1 }));
        s.upsertComponent(rec('api', { position: 2, dependencies: [{ component: 'influxdb', type: 'hard' }] }));
        const db = raw(dir);
        db.pragma('ignore_check_constraints = ON');
        db.prepare(sql).run(...params);
        return s;
      }

      it.each([
        [
          'UPDATE components SET dependencies = \'[{"component": "influxdb", \' WHERE name = \'api\'',
          /components row "api" is corrupt: dependencies: not valid JSON/,
        ],
        [
          'UPDATE components SET dependencies = \'{"component": "influxdb"}\' WHERE name = \'api\'',
          /components row "api" is corrupt: dependencies: /,
        ],
        [
          'UPDATE components SET instance = \'{"kind":"process","pid":"41088","startTime":"1"}\' WHERE name = \'api\'',
          /components row "api" is corrupt: instance\.pid: /,
        ],
        ["UPDATE components SET state = 'zombie' WHERE name = 'api'", /components row "api" is corrupt: state: /],
        ["UPDATE components SET held = 7 WHERE name = 'api'", /components row "api" is corrupt: held: /],
      ])('%s gives a clear error naming the row', (sql, message) => {
        const s = corrupted(sql);
        for (const read of [() => s.components(), () => s.component('api'), () => s.actualState()]) {
          const e = thrown(read);
          expect(e.code).toBe('KS_STATE_CORRUPT');
          expect(e.message).toMatch(message);
          expect(e.message).toContain('state.db');
        }
        expect(s.component('influxdb')?.name).toBe('influxdb');
      });

      it('names the history row whose reconcile is corrupt', () => {
        const dir = tempDir();
        const s = store(dir);
        const id = s.beginApply({ revision: 'r', planFile: 'p', startedAt: 1, reconcile: RECONCILE });
        raw(dir).prepare('UPDATE applies SET reconcile = ? WHERE id = ?').run('{"stopOrder": 3}', id);
        const e = thrown(() => s.history({ limit: 5 }));
        expect(e.code).toBe('KS_STATE_CORRUPT');
        expect(e.message).toMatch(new RegExp(`applies row ${id} is corrupt: reconcile\\.stopOrder`));
        expect(thrown(() => s.unfinishedApply()).code).toBe('KS_STATE_CORRUPT');
      });
    });

    // The child writes the way the store does (same file, same pragmas, same rows), one transaction per step,
    // and reports each step on stdout only after it committed; stdout to a pipe is synchronous on Linux.
    const WRITER = `
import { createRequire } from 'node:module';
const Database = createRequire(import.meta.url)(process.env.BETTER_SQLITE3);
const db = new Database(process.argv[2], { timeout: 5000 });
db.pragma('busy_timeout = 5000');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('foreign_keys = ON');
const reconcile = JSON.stringify({ stopOrder: [], startOrder: ['api'], noTouch: [], reasons: { api: 'new' } });
const applyId = db.prepare("INSERT INTO applies (revision, plan_file, started_at, reconcile) VALUES ('rev-killed', 'plans/edge.toml', 1, ?) RETURNING id").pluck().get(reconcile);
process.stdout.write('apply ' + applyId + '\\n');
const add = db.prepare("INSERT INTO components (name, hash, version, runtime, position, dependencies, instance, state, restarts, held, since) VALUES (?, 'v1:sha256:x', '1.0.0', 'process', ?, '[{\\"component\\":\\"api\\",\\"type\\":\\"hard\\"}]', ?, 'running', 0, 0, ?)");
const bump = db.prepare("UPDATE components SET restarts = restarts + 1 WHERE name = 'api'");
const step = db.transaction((i) => {
  add.run('c' + i, i, JSON.stringify({ kind: 'process', pid: 1000 + i, startTime: String(i) }), i);
  bump.run();
});
for (let i = 1; ; i++) {
  step(i);
  process.stdout.write('committed ' + i + '\\n');
}
`;

    describe('a writer killed with SIGKILL', () => {
      it('leaves a store that opens, holds every committed step, and reports the interrupted apply', async () => {
        const dir = tempDir();
        const setup = store(dir);
        setup.upsertComponent(rec('api', { position: 0 }));
        setup.close();

        const script = join(tempDir(), 'writer.mjs');
        writeFileSync(script, WRITER);
        const child = spawn(process.execPath, [script, join(dir, 'state.db')], {
          env: { ...process.env, BETTER_SQLITE3: createRequire(import.meta.url).resolve('better-sqlite3') },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
        const exited = new Promise<NodeJS.Signals | null>((resolve) =>
          child.on('exit', (_code, signal) => resolve(signal)),
        );

        const committed = () => [...out.matchAll(/^committed (\d+)$/gm)].map((m) => Number(m[1])).at(-1) ?? 0;
        const deadline = Date.now() + 20_000;
        while (committed() < 200 && child.exitCode === null && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 10));
        expect(err).toBe('');
        expect(committed()).toBeGreaterThanOrEqual(200);
        child.kill('SIGKILL');
        expect(await exited).toBe('SIGKILL');
        const last = committed();

        const s = store(dir);
        const comps = s.components();
        const steps = comps.filter((c) => c.name.startsWith('c'));
        // Atomic steps: the counter bumped in the same transaction as each insert matches the inserts exactly.
        expect(s.component('api')?.restarts).toBe(steps.length);
        expect(steps.length).toBeGreaterThanOrEqual(last);
        for (let i = 1; i <= last; i++)
          expect(s.component(`c${i}`)?.instance).toEqual({ kind: 'process', pid: 1000 + i, startTime: String(i) });
        expect(s.actualState().components[0]).toMatchObject({ name: 'api', running: true });

        const interrupted = s.unfinishedApply();
        expect(interrupted).toMatchObject({
          id: Number(/^apply (\d+)$/m.exec(out)?.[1]),
          revision: 'rev-killed',
          startedAt: 1,
        });
        s.finishApply(interrupted!.id, { finishedAt: 2, outcome: 'failure', summary: 'interrupted' });
        expect(s.unfinishedApply()).toBeUndefined();
        expect(raw(dir).pragma('integrity_check', { simple: true })).toBe('ok');
      });
    });
  });
}
