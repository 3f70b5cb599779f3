// The device's clock against the newest signature in a real state store, the clock set on cue.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readAppliedState } from '../../src/doctor/applied-state.js';
import { checkClock } from '../../src/doctor/clock-check.js';
import { openStateStore } from '../../src/store/state-store.js';
import { scratch, stateWithApplied, type Scratch } from './doctor-fixtures.js';

const SIGNED = 1_780_000_000; // 2026-05-28T20:26:40Z
const COMMIT = 'c0ffee0c0ffee0c0ffee0c0ffee0c0ffee0c0ffe';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.cleanup());

const clockAt = (seconds: number) => checkClock(readAppliedState(s.stateDir), seconds * 1000, s.stateDir);

describe('clock', () => {
  it('passes a clock at or after the applied signature', () => {
    stateWithApplied(s.stateDir, { id: COMMIT, signedAt: SIGNED });
    expect(clockAt(SIGNED)).toMatchObject({ check: 'clock', status: 'pass' });
    expect(clockAt(SIGNED + 3600).detail).toBe(
      `2026-05-28T21:26:40.000Z, not earlier than the signature of the revision applied last (c0ffee0c0ffe), signed at 2026-05-28T20:26:40.000Z`,
    );
  });

  it('fails a clock earlier than the applied signature, saying by how much, with the fix', () => {
    stateWithApplied(s.stateDir, { id: COMMIT, signedAt: SIGNED });
    const r = clockAt(SIGNED - 3 * 86_400);
    expect(r).toMatchObject({ status: 'fail' });
    expect(r.detail).toBe(
      `this device's clock says 2026-05-25T20:26:40.000Z, 3 days earlier than the signature of the revision applied last (c0ffee0c0ffe), signed at 2026-05-28T20:26:40.000Z`,
    );
    expect(r.fix).toContain('timedatectl set-ntp true');
    expect(r.fix).toContain(`keystone floor --state-dir ${s.stateDir} --reset`);
  });

  it('compares with the replay floor when an unsigned revision was applied after a signed one', () => {
    stateWithApplied(s.stateDir, { id: COMMIT, signedAt: SIGNED });
    const store = openStateStore(s.stateDir);
    store.setAppliedRevision({
      id: 'dir:unsigned',
      source: 'test',
      planFile: 'plans/test.toml',
      unsigned: true,
      appliedAt: Date.now(),
    });
    store.close();
    const r = clockAt(SIGNED - 60);
    expect(r).toMatchObject({ status: 'fail' });
    expect(r.detail).toContain('60 s earlier than the newest signature this device applied (its replay floor)');
  });

  it('skips when nothing signed was applied', () => {
    expect(clockAt(0)).toMatchObject({ status: 'skip' });
    stateWithApplied(s.stateDir, { id: 'dir:unsigned', unsigned: true, signedAt: undefined });
    expect(clockAt(0)).toMatchObject({
      status: 'skip',
      detail: 'the revision applied last (dir:unsigned) is unsigned: no signing time to compare with',
    });
  });
});
