// What a status says beside its state (SPEC §8, issue 29) survives the durable outbox: written with the row, read
// back whole by the reporter, after a restart too; and a row enqueued by an agent before details existed (schema 11,
// then upgraded) still delivers, without them. A real SQLite state store; the reporter records what it is handed.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { statusContext, type CommitStatus, type StatusReporter } from '../../src/report/commit-status.js';
import { StatusOutbox } from '../../src/report/status-outbox.js';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { openStateStore, STATE_DB_FILE, type StateStore } from '../../src/store/state-store.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const dirs: string[] = [];
const stores: StateStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'keystone-outbox-details-'));
  chmodSync(d, 0o700);
  dirs.push(d);
  return d;
}

function open(dir: string): StateStore {
  const s = openStateStore(dir);
  stores.push(s);
  return s;
}

/** A reporter that keeps every status it is handed. */
function recorder(): StatusReporter & { got: CommitStatus[] } {
  const got: CommitStatus[] = [];
  return { name: 'git-notes', got, deliver: async (s) => void got.push(s) };
}

const details = {
  agent: '0.1.0',
  health: { uptimeS: 93784, load1: 0.42, memFreeBytes: 2_560_000_000, diskFreeBytes: 12_000_000_000, tempC: 48.5 },
  log: ['api: listen EADDRINUSE 0.0.0.0:8080', 'api: token [config:token] refused'],
};

describe('the outbox keeps what a status says beside its state', () => {
  it('details go into the row and come out to the reporter whole, also after the store is reopened', async () => {
    const dir = tempDir();
    const first = open(dir);
    const r = recorder();
    const o = new StatusOutbox({ store: first, reporters: [r] });
    o.enqueue({
      commit: A,
      state: 'failure',
      description: 'failed: api (exited with 1)',
      context: statusContext('gw-1'),
      at: 1_000,
      details,
    });
    o.enqueue({ commit: B, state: 'pending', description: 'applying', context: statusContext('gw-1'), at: 1_001 });
    await o.flush();
    await o.close();
    expect(r.got.map((s) => [s.commit, s.details])).toEqual([
      [A, details],
      [B, undefined],
    ]);
    expect('details' in r.got[1]!).toBe(false);

    // Read back by another run of the agent: the stored rows carry them.
    first.close();
    stores.splice(stores.indexOf(first), 1);
    const again = open(dir);
    const rows = again.outboxEntries({ limit: 10 });
    expect(rows.find((e) => e.commit === A)?.details).toEqual(details);
    expect(rows.find((e) => e.commit === B)?.details).toBeUndefined();
  });

  it('a status enqueued before an upgrade (schema 11: no details column) is delivered after it, without details', async () => {
    const dir = tempDir();
    // The state database as the previous release left it: migrated to 11, one status still open.
    const file = join(dir, STATE_DB_FILE);
    const old = new Sqlite(file);
    chmodSync(file, 0o600);
    old.pragma('journal_mode = WAL');
    migrate(old, 1, MIGRATIONS.slice(0, 11));
    old
      .prepare(
        `INSERT INTO status_outbox (reporter, "commit", state, description, context, fields, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        'git-notes',
        A,
        'success',
        'applied: 4 components running',
        statusContext('gw-1'),
        '{"target":"pi4"}',
        5_000,
        5_000,
      );
    old.close();

    const s = open(dir);
    expect(s.outboxHeads()).toHaveLength(1);
    const r = recorder();
    const o = new StatusOutbox({ store: s, reporters: [r] });
    await o.flush();
    await o.close();
    expect(r.got).toHaveLength(1);
    expect(r.got[0]).toMatchObject({ commit: A, state: 'success', fields: { target: 'pi4' }, at: 5_000 });
    expect(r.got[0]!.details).toBeUndefined();
    expect(s.outboxCounts()).toEqual({ open: 0, delivered: 1, failed: 0 });
  });

  it('details that do not parse (a foreign writer, a newer agent) are dropped, and the status still goes', async () => {
    const dir = tempDir();
    const s = open(dir);
    s.enqueueOutbox([
      {
        reporter: 'git-notes',
        commit: A,
        state: 'success',
        description: 'ok',
        context: statusContext('gw-1'),
        details,
        createdAt: 1_000,
      },
    ]);
    const db = new Sqlite(join(dir, STATE_DB_FILE));
    db.prepare('UPDATE status_outbox SET details = ?').run('{"health": {"load1": "high"}}');
    db.close();
    const r = recorder();
    const o = new StatusOutbox({ store: s, reporters: [r] });
    await o.flush();
    await o.close();
    expect(r.got.map((x) => [x.state, x.details])).toEqual([['success', undefined]]);
  });
});
