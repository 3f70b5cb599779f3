// The revision waiting for its maintenance window (SPEC §19), on fake timers and a wall clock the test moves: handed
// back when the window opens; never waiting longer than the recheck at a time, so a wall clock stepped forward (NTP)
// is seen within it; the same revision keeps when its wait began; a newer one replaces it.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RECHECK_MS, WindowWait } from '../../src/agent/window-wait.js';
import { createLogger } from '../../src/log/logger.js';
import type { Revision } from '../../src/source/directory-source.js';

const rev = (id: string) => ({ id, source: 'test' }) as unknown as Revision;
const window = {
  days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const,
  from: 3 * 60,
  to: 4 * 60,
  timezone: 'UTC',
};
const T0 = Date.UTC(2026, 11, 7, 2, 0);

describe('WindowWait', () => {
  let wall: number;
  let taken: string[];
  let w: WindowWait;
  beforeEach(() => {
    vi.useFakeTimers();
    wall = T0;
    taken = [];
    w = new WindowWait({
      now: () => wall,
      log: createLogger({ pretty: false, write: () => undefined }),
      retake: (r) => taken.push(r.id),
    });
  });
  afterEach(() => vi.useRealTimers());
  const pass = (ms: number) => {
    wall += ms;
    vi.advanceTimersByTime(ms);
  };

  it('hands the revision back when the window opens, in steps of at most the recheck, and says when it opens', () => {
    const opensAt = T0 + 3_600_000;
    const h = w.wait(rev('a'), window, opensAt);
    expect(h).toMatchObject({
      revision: 'a',
      opensAt,
      since: T0,
      stable: 'held: outside the maintenance window (opens Mon 03:00 UTC)',
    });
    expect(h.reason).toBe('held: outside the maintenance window (opens Mon 03:00 UTC, in 1h)');
    pass(RECHECK_MS - 1);
    expect(taken).toEqual([]);
    pass(1);
    // Looked at again after the recheck (the loop finds it still closed and waits again, keeping its start).
    expect(taken).toEqual(['a']);
    pass(60_000);
    expect(w.wait(rev('a'), window, opensAt).since).toBe(T0);
  });

  it('a wall clock stepped forward past the opening is seen at the next recheck, not an hour later', () => {
    w.wait(rev('a'), window, T0 + 3_600_000);
    wall += 3_600_000; // NTP: the device was an hour behind
    vi.advanceTimersByTime(RECHECK_MS);
    expect(taken).toEqual(['a']);
  });

  it('a newer revision replaces the waiting one; the waiting one is then never handed back', () => {
    w.wait(rev('a'), window, T0 + 5_000);
    w.forget('b');
    expect(w.hold()).toBeUndefined();
    pass(RECHECK_MS);
    expect(taken).toEqual([]);
    w.wait(rev('b'), window, T0 + RECHECK_MS + 5_000);
    w.done('b');
    pass(RECHECK_MS);
    expect(taken).toEqual([]);
  });
});
