// The first look after start, spread by the device's name (SPEC §13), and a server's Retry-After read and capped.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { busyWaitMs, firstLookDelayMs, pollOffsetMs, retryAfterMs } from '../../src/git/git-poll-delay.js';

const HOUR = 3_600_000;

describe('pollOffsetMs', () => {
  it('gives a name the same offset every time, inside [0, pollMs)', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 7 * 24 * HOUR }), (name, pollMs) => {
        const o = pollOffsetMs(name, pollMs);
        expect(Number.isInteger(o)).toBe(true);
        expect(o).toBeGreaterThanOrEqual(0);
        expect(o).toBeLessThan(pollMs);
        expect(pollOffsetMs(name, pollMs)).toBe(o);
      }),
    );
  });

  it('spreads a fleet of similar names over the whole interval', () => {
    const pollMs = 60_000;
    const buckets = new Array<number>(10).fill(0);
    const names = Array.from({ length: 1000 }, (_, i) => `edge-${i}`);
    for (const n of names) buckets[Math.floor(pollOffsetMs(n, pollMs) / (pollMs / 10))]!++;
    // 100 expected per tenth of the interval; a hash that clumped would leave tenths nearly empty or overfull.
    for (const b of buckets) expect(b).toBeGreaterThan(60);
    for (const b of buckets) expect(b).toBeLessThan(140);
    // Names one character apart are not neighbours in time.
    expect(new Set(names.map((n) => pollOffsetMs(n, pollMs))).size).toBeGreaterThan(950);
  });
});

describe('firstLookDelayMs', () => {
  it('is the offset plus up to 10% jitter for a device that runs something', () => {
    const o = pollOffsetMs('edge-7', 60_000);
    expect(firstLookDelayMs({ device: 'edge-7', pollMs: 60_000, running: true }, () => 0)).toBe(o);
    expect(firstLookDelayMs({ device: 'edge-7', pollMs: 60_000, running: true }, () => 0.5)).toBe(o + 3000);
    fc.assert(
      fc.property(fc.string(), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (name, r) => {
        const d = firstLookDelayMs({ device: name, pollMs: 60_000, running: true }, () => r);
        expect(d).toBeGreaterThanOrEqual(pollOffsetMs(name, 60_000));
        expect(d).toBeLessThanOrEqual(pollOffsetMs(name, 60_000) + 6000);
      }),
    );
  });

  it('is immediate for a device that runs nothing yet', () => {
    expect(firstLookDelayMs({ device: 'edge-7', pollMs: 60_000, running: false }, () => 0.9)).toBe(0);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  it('reads delta-seconds and HTTP dates', () => {
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Tue, 01 Dec 2026 12:05:00 GMT', now)).toBe(300_000);
    expect(retryAfterMs('Tue, 01 Dec 2026 11:00:00 GMT', now)).toBe(0); // already past
  });

  it('ignores what is absent or unreadable', () => {
    for (const v of [undefined, '', '-5', '1.5', 'soon', '2026-12-01T12:05:00Z', 'Tue, 99 Foo 2026'])
      expect(retryAfterMs(v, now)).toBeUndefined();
  });
});

describe('busyWaitMs', () => {
  it('honours the server up to ten polls and at most an hour', () => {
    expect(busyWaitMs(120_000, 60_000)).toBe(120_000);
    expect(busyWaitMs(86_400_000, 60_000)).toBe(600_000);
    expect(busyWaitMs(86_400_000, HOUR)).toBe(HOUR);
    expect(busyWaitMs(-1, 60_000)).toBe(0);
  });
});
