import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/core/duration.js';

describe('Go-style durations', () => {
  it.each([
    ['200ms', 200],
    ['10s', 10_000],
    ['2m0s', 120_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1500],
    ['.5s', 500],
    ['1m30.5s', 90_500],
    ['500us', 0.5],
    ['500µs', 0.5],
    ['1000ns', 0.001],
    ['0', 0],
    ['0s', 0],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each(['', '10', '10x', '-1s', '+1s', 's', '1 s', '1s ', '1.2.3s', 'ten seconds', '1d', '5 m'])(
    '%j is refused',
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );

  it.each([
    [0, '0s'],
    [200, '200ms'],
    [1500, '1.5s'],
    [10_000, '10s'],
    [120_000, '2m0s'],
    [3_600_000, '1h0m0s'],
    [5_430_000, '1h30m30s'],
    [0.5, '500µs'],
  ])('%d ms formats as %s, the way Go prints it', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('formatting then parsing gives the same duration back', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 24 * 3_600_000 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBeCloseTo(ms, 6);
      }),
    );
  });
});
