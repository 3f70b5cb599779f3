// core/backoff.ts: monotone up to its cap, within its jitter's bounds, and each schedule it replaced kept exactly
// (the hand-written formulas as they were, against the call sites that now use it).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/core/backoff.js';
import { backoffDelay as restartDelay, DEFAULT_RESTART_LIMITS } from '../../src/core/restart-policy.js';
import { pollDelayMs } from '../../src/git/git-poll-delay.js';
import { backoffDelay as outboxDelay } from '../../src/report/status-outbox.js';

const attempt = fc.integer({ min: -3, max: 80 });
const ms = fc.integer({ min: 0, max: 10 * 60_000 });
const unit = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });

describe('backoffMs', () => {
  it('doubles from its base and never passes its cap, without jitter', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, { baseMs: 100, capMs: 1000 }))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, { baseMs: 100, maxDoublings: 2 }))).toEqual([
      100, 200, 400, 400, 400, 400,
    ]);
    expect(backoffMs(-2, { baseMs: 100 })).toBe(100);
  });

  it('is monotone in the attempt up to its cap', () => {
    fc.assert(
      fc.property(
        attempt,
        ms,
        ms,
        fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
        (n, base, cap, doublings) => {
          const o = { baseMs: base, capMs: cap, ...(doublings !== undefined && { maxDoublings: doublings }) };
          const d = backoffMs(n, o);
          expect(d).toBeLessThanOrEqual(cap);
          expect(d).toBeGreaterThanOrEqual(Math.min(base, cap));
          expect(backoffMs(n + 1, o)).toBeGreaterThanOrEqual(d);
        },
      ),
    );
  });

  it('stays within its jitter bounds, and is monotone in the random number', () => {
    fc.assert(
      fc.property(
        attempt,
        ms,
        ms,
        unit,
        unit,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (n, base, cap, r1, r2, min, spread) => {
          const raw = backoffMs(n, { baseMs: base, capMs: cap });
          const scale = (random: number) =>
            backoffMs(n, { baseMs: base, capMs: cap, jitter: { kind: 'scale', min, spread, random } });
          expect(scale(r1)).toBeGreaterThanOrEqual(Math.round(raw * min));
          expect(scale(r1)).toBeLessThanOrEqual(Math.round(raw * (min + spread)));
          const equal = (random: number) =>
            backoffMs(n, { baseMs: base, capMs: cap, jitter: { kind: 'equal', random } });
          expect(equal(r1)).toBeGreaterThanOrEqual(Math.round(raw / 2));
          expect(equal(r1)).toBeLessThanOrEqual(raw);
          const [lo, hi] = r1 <= r2 ? [r1, r2] : [r2, r1];
          expect(scale(lo)).toBeLessThanOrEqual(scale(hi));
          expect(equal(lo)).toBeLessThanOrEqual(equal(hi));
        },
      ),
    );
  });

  it('clamps the random number to [0, 1]', () => {
    const o = (random: number) => ({ baseMs: 1000, jitter: { kind: 'scale' as const, min: 0.8, spread: 0.4, random } });
    expect(backoffMs(0, o(-1))).toBe(800);
    expect(backoffMs(0, o(7))).toBe(1200);
  });
});

describe('the schedules it replaced, kept exactly', () => {
  it("the Git poll's retries (git/git-poll-delay.ts)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 80 }),
        ms,
        fc.integer({ min: 1, max: 120_000 }),
        unit,
        (failures, pollMs, retryBaseMs, r) => {
          const raw = Math.min(pollMs, retryBaseMs * 2 ** Math.min(failures - 1, 52));
          expect(pollDelayMs(failures, { pollMs, retryBaseMs }, () => r)).toBe(Math.round(raw * (0.8 + 0.2 * r)));
        },
      ),
    );
  });

  it("the status outbox's equal jitter (report/status-outbox.ts)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 80 }), unit, ms, ms, (attempts, random, initialMs, maxMs) => {
        const base = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempts - 1));
        expect(outboxDelay(attempts, random, initialMs, maxMs)).toBe(Math.round(base / 2 + (random * base) / 2));
      }),
    );
  });

  it('crash restarts (core/restart-policy.ts)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 80 }), unit, (n, r) => {
        const limits = DEFAULT_RESTART_LIMITS;
        const was =
          n <= 1
            ? limits.firstRestartMs
            : Math.min(
                limits.maxBackoffMs,
                Math.round(Math.min(limits.maxBackoffMs, limits.firstRestartMs * 2 ** (n - 1)) * (0.8 + 0.4 * r)),
              );
        expect(restartDelay(n, () => r, limits)).toBe(was);
      }),
    );
  });

  it("GitHub's untimed rate limits, an exit the store cannot record, a revision retried (as their call sites pass it)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 80 }), ms, ms, (n, base, cap) => {
        // report/github-status-reporter.ts
        expect(backoffMs(n, { baseMs: base, capMs: cap })).toBe(Math.min(cap, base * 2 ** n));
        // agent/instance-supervision.ts
        expect(backoffMs(n, { baseMs: 1000, capMs: cap, maxDoublings: 3 })).toBe(
          Math.min(cap, 1000 * 2 ** Math.min(n, 3)),
        );
        // agent/revision-queue.ts
        expect(backoffMs(n, { baseMs: base, maxDoublings: 4 })).toBe(base * 2 ** Math.min(n, 4));
      }),
    );
  });
});
