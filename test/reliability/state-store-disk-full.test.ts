// The state store on a full disk, without root: SQLite reports SQLITE_FULL for a file system out of space and for a
// database at its max_page_count alike, so the second stands in for the first. Every write then fails with the
// store's own code, KS_STATE_DISK_FULL (what the agent logs and retries on), writes nothing, and leaves a store that
// reads, passes integrity_check and takes the same write once there is room. disk-full.e2e.test.ts has the real disk.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { SqliteStateStore } from '../../src/store/sqlite-state-store.js';
import { openStateDatabase } from '../../src/store/state-database.js';
import { StateStoreError } from '../../src/store/state-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const REVISION = {
  id: 'dir:aaaa',
  source: 'test',
  planFile: 'plans/p.toml',
  unsigned: false,
  appliedAt: 1,
  signedAt: 100,
};
const RECONCILE = { stopOrder: [], startOrder: ['api'], noTouch: [], reasons: { api: 'new' } };

it('every kind of write on a full database fails with KS_STATE_DISK_FULL, writes nothing, and succeeds once there is room', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keystone-store-full-'));
  dirs.push(dir);
  const { db, file } = openStateDatabase(dir, { now: () => 1 });
  const store = new SqliteStateStore(db, file, () => 1, 100);
  try {
    store.setAppliedRevision(REVISION);
    const pages = db.pragma('page_count', { simple: true }) as number;
    // Room for nothing more: a write that needs one more page is refused as a full disk is.
    db.pragma(`max_page_count = ${pages}`);
    const big = 'x'.repeat(64 * 1024);
    const writes: Array<[string, () => unknown]> = [
      [
        'beginApply (a transaction)',
        () => store.beginApply({ revision: big, planFile: 'plans/p.toml', startedAt: 2, reconcile: RECONCILE }),
      ],
      [
        'recordRejected',
        () => store.recordRejected({ revision: 'dir:bbbb', planFile: 'plans/p.toml', at: 2, reason: big }),
      ],
      ['setAppliedRevision', () => store.setAppliedRevision({ ...REVISION, id: big, signedAt: 200 })],
      ['setSyncSuspension', () => store.setSyncSuspension({ since: 2, revision: big, reason: big })],
    ];
    for (const [what, write] of writes) {
      let err: unknown;
      try {
        write();
      } catch (e) {
        err = e;
      }
      expect(err, what).toBeInstanceOf(StateStoreError);
      expect((err as StateStoreError).code, what).toBe('KS_STATE_DISK_FULL');
      expect((err as StateStoreError).message, what).toContain(file);
    }
    // Nothing of them was written, the floor included; the store still reads.
    expect(store.appliedRevision()).toMatchObject({ id: REVISION.id });
    expect(store.lastSignedAt()).toBe(100);
    expect(store.history({ limit: 10 })).toEqual([]);
    expect(store.syncSuspension()).toBeUndefined();
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');

    // Space returns: the very same write goes through.
    db.pragma('max_page_count = 1073741823');
    expect(
      store.beginApply({ revision: big, planFile: 'plans/p.toml', startedAt: 2, reconcile: RECONCILE }),
    ).toBeGreaterThan(0);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  } finally {
    store.close();
  }
});
