// The schedule of a Git source's looks, as a pure function: jittered polls, and a backoff that never outwaits a poll.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { pollDelayMs } from '../../src/git/git-poll-delay.js';

const at = (r: number) => () => r;

describe('pollDelayMs', () => {
  it('polls every pollMs ± 10% after a good look', () => {
    expect(pollDelayMs(0, { pollMs: 60_000 }, at(0))).toBe(54_000);
    expect(pollDelayMs(0, { pollMs: 60_000 }, at(0.5))).toBe(60_000);
    expect(pollDelayMs(0, { pollMs: 60_000 }, at(0.999999))).toBe(66_000);
  });

  it('doubles the retry delay per failure from retryBaseMs', () => {
    const top = (n: number) => pollDelayMs(n, { pollMs: 60_000, retryBaseMs: 1000 }, at(1));
    expect([1, 2, 3, 4, 5, 6].map(top)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000]);
  });

  it('caps the backoff at the poll interval, however many failures', () => {
    for (const n of [7, 10, 60, 1000, Number.MAX_SAFE_INTEGER]) {
      expect(pollDelayMs(n, { pollMs: 60_000 }, at(1))).toBe(60_000);
      expect(pollDelayMs(n, { pollMs: 60_000 }, at(0))).toBe(48_000);
    }
  });

  it('never retries later than one poll interval, and never sooner than 80% of the unjittered backoff', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 24 * 3600_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (failures, pollMs, retryBaseMs, r) => {
          const d = pollDelayMs(failures, { pollMs, retryBaseMs }, at(r));
          const raw = Math.min(pollMs, retryBaseMs * 2 ** Math.min(failures - 1, 52));
          expect(d).toBeLessThanOrEqual(pollMs);
          expect(d).toBeGreaterThanOrEqual(Math.floor(raw * 0.8));
        },
      ),
    );
  });

  it('spreads a fleet: different random draws give different delays at the cap', () => {
    const delays = new Set([0, 0.25, 0.5, 0.75].map((r) => pollDelayMs(20, { pollMs: 60_000 }, at(r))));
    expect(delays.size).toBe(4);
  });
});
