import { describe, expect, it } from 'vitest';
import { CoalescedTimers } from '../../src/runtime/coalesced-timers.js';

/** A hand-driven clock and timer queue: time moves only when the test says so. */
function fakeTime() {
  let now = 0;
  let armed: { at: number; fn: () => void } | undefined;
  let arms = 0;
  const timers = new CoalescedTimers(
    { now: () => now },
    (fn, ms) => {
      arms++;
      armed = { at: now + ms, fn };
      return armed as unknown as NodeJS.Timeout;
    },
    (t) => {
      if (armed === (t as unknown)) armed = undefined;
    },
  );
  return {
    timers,
    /** Advances to `t`, firing the armed timer each time it is due; returns how many wake-ups that took. */
    advanceTo(t: number): number {
      let wakeups = 0;
      while (armed && armed.at <= t) {
        now = armed.at;
        const { fn } = armed;
        armed = undefined;
        wakeups++;
        fn();
      }
      now = t;
      return wakeups;
    },
    get armed() {
      return armed !== undefined;
    },
    get arms() {
      return arms;
    },
  };
}

describe('CoalescedTimers', () => {
  it('fifty entries due within one grain run in one wake-up, none before its delay', () => {
    const t = fakeTime();
    const ran: number[] = [];
    for (let i = 0; i < 50; i++) {
      t.advanceTo(1 + i * 13); // spread over 650 ms, as components started one after another
      const scheduledAt = 1 + i * 13;
      t.timers.schedule(10_000, () => ran.push(scheduledAt), 1000);
    }
    expect(t.advanceTo(10_999)).toBe(0); // due at 10.001 s … 10.638 s: rounded up to 11 s
    expect(ran).toEqual([]);
    expect(t.advanceTo(11_000)).toBe(1);
    expect(ran).toHaveLength(50);
    expect(t.armed).toBe(false);
  });

  it('one Node timer at a time, for the earliest entry; a cancelled entry never runs and an empty set disarms', () => {
    const t = fakeTime();
    const ran: string[] = [];
    t.timers.schedule(5_000, () => ran.push('late'), 1000);
    const cancel = t.timers.schedule(2_000, () => ran.push('cancelled'), 1000);
    t.timers.schedule(3_000, () => ran.push('early'), 1000);
    expect(t.timers.size).toBe(3);
    cancel();
    expect(t.advanceTo(4_000)).toBe(2); // armed for 2 s (nothing due any more), then 3 s
    expect(ran).toEqual(['early']);
    expect(t.advanceTo(5_000)).toBe(1);
    expect(ran).toEqual(['early', 'late']);
    const c2 = t.timers.schedule(1_000, () => ran.push('never'));
    c2();
    expect(t.armed).toBe(false);
  });

  it('an entry scheduled from a running entry (a probe loop) is armed again; a throwing entry does not stop the others', () => {
    const t = fakeTime();
    let ticks = 0;
    const loop = () => {
      ticks++;
      t.timers.schedule(10_000, loop, 1000);
    };
    t.timers.schedule(10_000, loop, 1000);
    t.timers.schedule(
      10_000,
      () => {
        throw new Error('boom');
      },
      1000,
    );
    expect(t.advanceTo(60_000)).toBe(6);
    expect(ticks).toBe(6);
  });
});
