// Maintenance windows (SPEC §19), pure: open or not at an instant, when they close or open next; across midnight,
// across daylight saving changes, in several zones; properties over random instants and windows.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  WEEKDAYS,
  describeOpening,
  describeWait,
  formatWindow,
  isTimezone,
  parseClockTime,
  parseWindowText,
  type MaintenanceWindow,
  windowState,
} from '../../src/core/maintenance-window.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const win = (w: Omit<Partial<MaintenanceWindow>, 'from' | 'to'> & { from: string; to: string }): MaintenanceWindow => ({
  days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
  timezone: 'UTC',
  ...w,
  from: parseClockTime(w.from)!,
  to: parseClockTime(w.to)!,
});

describe('maintenance windows', () => {
  it('parses wall-clock times and knows zones', () => {
    expect([
      parseClockTime('02:00'),
      parseClockTime('23:59'),
      parseClockTime('24:00'),
      parseClockTime('24:01'),
      parseClockTime('2:00'),
      parseClockTime('12:60'),
    ]).toEqual([120, 1439, 1440, undefined, undefined, undefined]);
    expect([isTimezone('Europe/Berlin'), isTimezone('UTC'), isTimezone('Mars/Olympus')]).toEqual([true, true, false]);
  });

  it('is open inside its hours on its days, in its timezone, and says when it closes or opens', () => {
    const w = win({ days: ['tue'], from: '02:00', to: '04:00', timezone: 'Europe/Berlin' });
    // Tuesday 2026-12-08 02:30 in Berlin (CET, UTC+1) is 01:30Z.
    expect(windowState(w, at('2026-12-08T01:30:00Z'))).toEqual({ open: true, closesAt: at('2026-12-08T03:00:00Z') });
    // Monday evening: opens Tuesday 02:00 CET.
    expect(windowState(w, at('2026-12-07T20:00:00Z'))).toEqual({ open: false, opensAt: at('2026-12-08T01:00:00Z') });
    // Right at the close: shut, next Tuesday.
    expect(windowState(w, at('2026-12-08T03:00:00Z'))).toEqual({ open: false, opensAt: at('2026-12-15T01:00:00Z') });
  });

  it('runs past midnight when `to` is not after `from`, from the day it opens', () => {
    const w = win({ days: ['sat'], from: '22:00', to: '04:00' });
    // Sunday 2026-12-06 03:00Z: inside Saturday's window.
    expect(windowState(w, at('2026-12-06T03:00:00Z'))).toEqual({ open: true, closesAt: at('2026-12-06T04:00:00Z') });
    // Saturday 21:59: not yet.
    expect(windowState(w, at('2026-12-05T21:59:00Z'))).toEqual({ open: false, opensAt: at('2026-12-05T22:00:00Z') });
    // Sunday 22:30: Sunday is not a window day.
    expect(windowState(w, at('2026-12-06T22:30:00Z'))).toEqual({ open: false, opensAt: at('2026-12-12T22:00:00Z') });
  });

  it('follows daylight saving: a window in the hour the clocks skip opens when they land; in the hour they repeat, at its first occurrence', () => {
    // Europe/Berlin, 2027-03-28: 02:00 CET → 03:00 CEST (01:00Z). A window 02:30–04:00 opens at 03:00 CEST = 01:00Z.
    const spring = win({ days: ['sun'], from: '02:30', to: '04:00', timezone: 'Europe/Berlin' });
    expect(iso((windowState(spring, at('2027-03-27T12:00:00Z')) as { opensAt: number }).opensAt)).toBe(
      '2027-03-28T01:00:00.000Z',
    );
    // 2027-10-31: 03:00 CEST → 02:00 CET (01:00Z). 02:30 first occurs at 00:30Z (CEST).
    const autumn = win({ days: ['sun'], from: '02:30', to: '05:00', timezone: 'Europe/Berlin' });
    expect(iso((windowState(autumn, at('2027-10-30T12:00:00Z')) as { opensAt: number }).opensAt)).toBe(
      '2027-10-31T00:30:00.000Z',
    );
    // The night before spring forward in New York, a window 01:00–03:00 local lasts 2 hours of wall time, from 06:00Z.
    const ny = win({ days: ['sun'], from: '01:00', to: '03:00', timezone: 'America/New_York' });
    expect(windowState(ny, at('2027-03-14T06:30:00Z'))).toMatchObject({ open: true });
  });

  const windows = fc.record({
    days: fc.uniqueArray(fc.constantFrom(...WEEKDAYS), { minLength: 1, maxLength: 7 }),
    from: fc.integer({ min: 0, max: 24 * 60 - 1 }),
    to: fc.integer({ min: 0, max: 24 * 60 }),
    timezone: fc.constantFrom(
      'UTC',
      'Europe/Berlin',
      'America/New_York',
      'Asia/Kolkata',
      'Australia/Lord_Howe',
      'Pacific/Chatham',
    ),
  });
  const instants = fc.integer({ min: at('2026-01-01T00:00:00Z'), max: at('2030-12-31T00:00:00Z') });

  it('property: a window opens within eight days, and is open from then on until it closes, shut just before', () => {
    fc.assert(
      fc.property(windows, instants, (w, now) => {
        const s = windowState(w, now);
        if (s.open) {
          expect(s.closesAt).toBeGreaterThan(now);
          expect(s.closesAt - now).toBeLessThanOrEqual(25 * 3_600_000);
          return;
        }
        expect(s.opensAt).toBeGreaterThan(now);
        expect(s.opensAt - now).toBeLessThanOrEqual(8 * 24 * 3_600_000);
        expect(windowState(w, s.opensAt).open).toBe(true);
        expect(windowState(w, s.opensAt - 1000).open).toBe(false);
      }),
      { numRuns: 400 },
    );
  });
});

describe('a window in words', () => {
  const berlin = { days: ['tue'] as const, from: 2 * 60, to: 4 * 60, timezone: 'Europe/Berlin' };

  it('--window text: days, from-to, zone; each mistake named', () => {
    expect(parseWindowText('mon,tue 02:00-04:00 Europe/Berlin')).toEqual({
      days: ['mon', 'tue'],
      from: 120,
      to: 240,
      timezone: 'Europe/Berlin',
    });
    expect(parseWindowText('sat 22:00-04:00 UTC')).toEqual({ days: ['sat'], from: 22 * 60, to: 240, timezone: 'UTC' });
    expect(parseWindowText('02:00-04:00 UTC')).toMatch(/is not a window: write "mon,tue 02:00-04:00 Europe\/Berlin"/);
    expect(parseWindowText('mon 02:00-04:00 Europe/Nowhere')).toMatch(/^timezone: "Europe\/Nowhere" is not a timezone/);
    expect(parseWindowText('mon,xyz 02:00-04:00 UTC')).toMatch(/^days: "xyz" is not a day/);
    expect(parseWindowText('mon 24:00-04:00 UTC')).toMatch(/^from: "24:00" is not a time of day/);
    expect(formatWindow(parseWindowText('mon,tue 02:00-04:00 Europe/Berlin') as never)).toBe(
      'mon,tue 02:00-04:00 Europe/Berlin',
    );
  });

  it('when it opens, on its own wall clock, and how long until then', () => {
    // Tuesday 2026-12-08 02:00 in Berlin (CET, UTC+1) is 01:00 UTC.
    const opens = Date.UTC(2026, 11, 8, 1, 0);
    const s = windowState(berlin, Date.UTC(2026, 11, 7, 21, 48));
    expect(s).toEqual({ open: false, opensAt: opens });
    expect(describeOpening(berlin, opens)).toBe('Tue 02:00 Europe/Berlin');
    expect(describeWait(opens - Date.UTC(2026, 11, 7, 21, 48))).toBe('3h12m');
    expect([
      describeWait(20_000),
      describeWait(45 * 60_000),
      describeWait(3 * 3_600_000),
      describeWait(50 * 3_600_000),
    ]).toEqual(['20s', '45m', '3h', '2d2h']);
  });
});

describe('a window over a daylight saving change ends when the wall clock says', () => {
  const berlin = (from: number, to: number) => ({
    days: ['sun'] as const,
    from: from * 60,
    to: to * 60,
    timezone: 'Europe/Berlin',
  });

  it('the night the clocks skip an hour: 01:00–04:00 closes at 04:00 CEST, after two hours', () => {
    // 2024-03-31: 02:00 CET becomes 03:00 CEST. 01:00 CET is 00:00Z; 04:00 CEST is 02:00Z.
    expect(windowState(berlin(1, 4), Date.UTC(2024, 2, 31, 0, 30))).toEqual({
      open: true,
      closesAt: Date.UTC(2024, 2, 31, 2, 0),
    });
  });

  it('the night the clocks repeat an hour: 01:00–03:00 closes at 03:00 CET, after three hours', () => {
    // 2024-10-27: 03:00 CEST becomes 02:00 CET. 01:00 CEST is 23:00Z the day before; 03:00 CET is 02:00Z.
    expect(windowState(berlin(1, 3), Date.UTC(2024, 9, 26, 23, 30))).toEqual({
      open: true,
      closesAt: Date.UTC(2024, 9, 27, 2, 0),
    });
  });
});

describe('a window wholly inside the hour the clocks skip', () => {
  it('is not empty that night: it opens when the clocks land and keeps its length', () => {
    // 2024-03-31, Europe/Berlin: 02:00–03:00 does not exist; the window opens at 03:00 CEST (01:00Z) for an hour.
    const w = { days: ['sun'] as const, from: 2 * 60, to: 3 * 60, timezone: 'Europe/Berlin' };
    expect(windowState(w, Date.UTC(2024, 2, 31, 1, 30))).toEqual({ open: true, closesAt: Date.UTC(2024, 2, 31, 2, 0) });
  });
});
