// The state directory as the agent judges it, and read as the agent leaves it, without doctor changing any of it:
// not creating a missing one, not leaving SQLite's -wal and -shm behind, not waiting on a running agent's lock.
import { chmodSync, chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lockStateDir } from '../../src/agent/state-dir-lock.js';
import { readAppliedState } from '../../src/doctor/applied-state.js';
import { checkStateDirectory, splitFix } from '../../src/doctor/state-dir-check.js';
import { openStateStore } from '../../src/store/state-store.js';
import { needs } from '../support/requirements.js';
import { scratch, snapshot, stateWithApplied, type Scratch } from './doctor-fixtures.js';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.cleanup());

describe('checkStateDirectory', () => {
  it('passes a state directory as the agent leaves it', async () => {
    stateWithApplied(s.stateDir);
    const r = await checkStateDirectory(s.stateDir);
    expect(r, r.detail).toMatchObject({ check: 'state-dir', status: 'pass' });
    expect(r.detail).toContain('mode 0711');
  });

  it('passes a missing state directory the agent can create, and does not create it', async () => {
    const r = await checkStateDirectory(s.stateDir);
    expect(r).toMatchObject({ status: 'pass' });
    expect(r.detail).toBe(`${s.stateDir} does not exist yet: the agent creates it (mode 0711) in ${s.dir}`);
    expect(existsSync(s.stateDir)).toBe(false);
  });

  it('fails a state directory other users can write, with the agent’s own fix and code', async () => {
    mkdirSync(s.stateDir);
    chmodSync(s.stateDir, 0o777);
    const before = snapshot(s.dir);
    const r = await checkStateDirectory(s.stateDir);
    expect(r).toMatchObject({ status: 'fail', code: 'KS_STATE_DIR_UNSAFE' });
    expect(r.detail).toBe(`state directory ${s.stateDir} is writable by other users (mode 777)`);
    expect(r.fix).toMatch(new RegExp(`^chown \\S+ ${s.stateDir} && chmod 711 ${s.stateDir}`));
    expect(snapshot(s.dir)).toEqual(before);
  });

  it('fails a missing state directory under a parent other users can write', async () => {
    chmodSync(s.dir, 0o777);
    const r = await checkStateDirectory(s.stateDir);
    expect(r).toMatchObject({ status: 'fail', code: 'KS_STATE_DIR_UNSAFE', fix: `chmod go-w ${s.dir}` });
    expect(existsSync(s.stateDir)).toBe(false);
  });

  it('fails a symbolic link in the state directory', async () => {
    stateWithApplied(s.stateDir);
    const { symlinkSync } = await import('node:fs');
    symlinkSync('/etc/passwd', join(s.stateDir, 'api-token'));
    const r = await checkStateDirectory(s.stateDir);
    expect(r).toMatchObject({ status: 'fail', code: 'KS_STATE_DIR_UNSAFE', fix: 'remove it' });
    expect(r.detail).toContain(`${join(s.stateDir, 'api-token')} is a symbolic link`);
  });

  const root = needs('root');
  describe.skipIf(root.skip)(root.title('as root'), () => {
    it('fails a state directory owned by another user (nobody)', async () => {
      mkdirSync(s.stateDir, { mode: 0o711 });
      chownSync(s.stateDir, 65534, 65534);
      const r = await checkStateDirectory(s.stateDir);
      expect(r).toMatchObject({ status: 'fail', code: 'KS_STATE_DIR_UNSAFE' });
      expect(r.detail).toMatch(/is owned by uid 65534( \(nobody\))?, not by the agent's user uid 0/);
    });
  });
});

describe('splitFix', () => {
  it('takes the fix after the colon only when it is one', () => {
    expect(splitFix('/x is writable by other users (mode 777): chmod go-w /x')).toEqual({
      problem: '/x is writable by other users (mode 777)',
      fix: 'chmod go-w /x',
    });
    expect(splitFix('/x is a symbolic link: the agent follows no link')).toEqual({
      problem: '/x is a symbolic link: the agent follows no link',
    });
  });
});

describe('readAppliedState: the store read in place, nothing left behind', () => {
  it('reads a closed store from a copy: no -wal or -shm appears', () => {
    stateWithApplied(s.stateDir, { id: 'dir:aaaaaaaaaaaa', signedAt: 1_700_000_123 });
    const before = snapshot(s.dir);
    const r = readAppliedState(s.stateDir);
    expect(r).toMatchObject({
      kind: 'read',
      revision: { id: 'dir:aaaaaaaaaaaa', signedAt: 1_700_000_123 },
      floor: 1_700_000_123,
    });
    expect(snapshot(s.dir)).toEqual(before);
  });

  it('reads what a running agent holds in its WAL, while it holds its lock', () => {
    stateWithApplied(s.stateDir, { id: 'dir:first', signedAt: 1_700_000_000 });
    // A running agent: the lock taken, the store open, a write not yet checkpointed into state.db.
    const lock = lockStateDir(s.stateDir);
    const store = openStateStore(s.stateDir);
    try {
      store.setAppliedRevision({
        id: 'dir:second',
        source: 'test',
        planFile: 'plans/test.toml',
        unsigned: false,
        signedAt: 1_700_000_500,
        appliedAt: Date.now(),
      });
      const r = readAppliedState(s.stateDir);
      expect(r).toMatchObject({
        kind: 'read',
        revision: { id: 'dir:second', signedAt: 1_700_000_500 },
        floor: 1_700_000_500,
      });
    } finally {
      store.close();
      lock.release();
    }
  });

  it('says when there is no store, and when the file is no database', () => {
    expect(readAppliedState(s.stateDir)).toMatchObject({ kind: 'none' });
    mkdirSync(s.stateDir, { mode: 0o711 });
    writeFileSync(
      join(s.stateDir, 'state.db'),
      'not a database, not at all, and long enough to have a header of a hundred bytes or so to look at'.repeat(2),
    );
    expect(readAppliedState(s.stateDir)).toMatchObject({ kind: 'unreadable', code: 'SQLITE_NOTADB' });
  });
});
