// isoTime and httpDate against Date's own conversions over Date's whole range, and the same refusals.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { httpDate, isoTime } from '../../src/core/iso-time.js';

const MAX_MS = 8.64e15;
/** Any time Date can hold, with the edges, the years around 0 and 9999, and leap days weighted in. */
const times = fc.oneof(
  fc.integer({ min: -MAX_MS, max: MAX_MS }),
  fc.integer({ min: -62_198_755_200_000, max: 253_402_300_800_000 }),
  fc.constantFrom(-MAX_MS, MAX_MS, 0, -1, 951_782_400_000, 4_107_542_400_000, -62_135_596_800_001, 253_402_300_799_999),
  fc.double({ min: -MAX_MS, max: MAX_MS, noNaN: true }),
);

describe('isoTime and httpDate', () => {
  it("are Date's toISOString and toUTCString for every time Date holds", () => {
    fc.assert(
      fc.property(times, (ms) => {
        expect(isoTime(ms)).toBe(new Date(ms).toISOString());
        expect(httpDate(ms)).toBe(new Date(ms).toUTCString());
      }),
      { numRuns: 20_000 },
    );
  });

  it('refuse what Date calls an invalid time', () => {
    for (const ms of [Number.NaN, Infinity, -Infinity, MAX_MS + 1, -MAX_MS - 1]) {
      expect(() => new Date(ms).toISOString()).toThrow(RangeError);
      expect(() => isoTime(ms)).toThrow(RangeError);
      expect(() => httpDate(ms)).toThrow(RangeError);
    }
  });
});
