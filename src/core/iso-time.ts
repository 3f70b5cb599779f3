// Times as text without Date's conversions. V8 answers the first conversion of a Date to calendar fields —
// toISOString included, which every log line's timestamp called — by loading the host's time zone through ICU: ~0.45
// MiB more that the agent then holds for its life (0.9 in an empty node; issue 31, docs/benchmarks.md, footprint). The
// arithmetic is proleptic Gregorian in UTC, as Date's; test/core/iso-time.property.test.ts checks both against Date
// over its whole range.

const DAY_MS = 86_400_000;
/** Date's range: ±100,000,000 days around 1970. */
const MAX_MS = 8.64e15;

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

interface Civil {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  ms: number;
  weekday: number;
}

/** Days since 1970-01-01 to year, month and day (Howard Hinnant's civil_from_days, eras of 400 years). */
function civil(ms: number): Civil {
  if (!Number.isFinite(ms) || Math.abs(ms) > MAX_MS) throw new RangeError('Invalid time value');
  const t = Math.trunc(ms);
  const days = Math.floor(t / DAY_MS);
  let rest = t - days * DAY_MS;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1_460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1_000);
  return {
    year,
    month,
    day: doy - Math.floor((153 * mp + 2) / 5) + 1,
    hour,
    minute,
    second,
    ms: rest - second * 1_000,
    // 1970-01-01 was a Thursday.
    weekday: (((days + 4) % 7) + 7) % 7,
  };
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** `new Date(ms).toISOString()`: `2026-12-06T04:45:54.000Z` (±YYYYYY outside years 0–9999); RangeError as Date's. */
export function isoTime(ms: number): string {
  const c = civil(ms);
  const year = c.year >= 0 && c.year <= 9999 ? pad(c.year, 4) : `${c.year < 0 ? '-' : '+'}${pad(Math.abs(c.year), 6)}`;
  return `${year}-${pad(c.month, 2)}-${pad(c.day, 2)}T${pad(c.hour, 2)}:${pad(c.minute, 2)}:${pad(c.second, 2)}.${pad(c.ms, 3)}Z`;
}

/** `new Date(ms).toUTCString()`, the HTTP date of RFC 9110: `Sun, 06 Dec 2026 04:45:54 GMT`. */
export function httpDate(ms: number): string {
  const c = civil(ms);
  const year = c.year >= 0 ? pad(c.year, 4) : `-${pad(-c.year, 4)}`;
  return `${DAYS[c.weekday]}, ${pad(c.day, 2)} ${MONTHS[c.month - 1]} ${year} ${pad(c.hour, 2)}:${pad(c.minute, 2)}:${pad(c.second, 2)} GMT`;
}
