// Maintenance windows (SPEC §19): when a device may apply a new revision, as wall-clock hours on some days in a
// timezone. Pure: the clock and the timezone database (Intl, ICU's tz data in Node) are what it is given.
//
// `days` names the day a window opens on; a window whose `to` is not after its `from` runs past midnight into the
// next day ("sat 22:00 → sun 04:00" is `days = ["sat"], from = "22:00", to = "04:00"`). Wall-clock times follow the
// timezone's daylight saving: on the night the clocks go forward, a window from 02:30 opens at 03:00 (the first
// instant that exists after it); on the night they go back, 01:30 means its first occurrence.

export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface MaintenanceWindow {
  days: readonly Weekday[];
  /** Minutes after local midnight. */
  from: number;
  to: number;
  /** An IANA zone, e.g. Europe/Berlin. */
  timezone: string;
}

export type WindowState = { open: true; closesAt: number } | { open: false; opensAt: number };

const MINUTE = 60_000;
/** Far enough for any window: a week, and a day of slack for a window that runs past midnight on the seventh day. */
const SEARCH_DAYS = 9;

/** "HH:MM" as minutes after midnight; undefined unless 00:00–24:00 (24:00 only as a window's end). */
export function parseClockTime(text: string): number | undefined {
  const m = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(text);
  if (!m) return undefined;
  const minutes = Number(m[1]) * 60 + Number(m[2]);
  return minutes > 24 * 60 ? undefined : minutes;
}

/** Whether Intl knows the zone (Node's ICU data): "Europe/Berlin", "UTC". */
export function isTimezone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Whether the window is open at `nowMs`, and when it closes or next opens (ms since the epoch). */
export function windowState(w: MaintenanceWindow, nowMs: number): WindowState {
  const length = (w.to > w.from ? w.to - w.from : w.to + 24 * 60 - w.from) * MINUTE;
  const today = localDate(nowMs, w.timezone);
  let next: number | undefined;
  // From yesterday (a window that opened yesterday evening may still be open) to a week ahead.
  for (let d = -1; d < SEARCH_DAYS; d++) {
    const day = addDays(today, d);
    if (!w.days.includes(WEEKDAYS[weekday(day)]!)) continue;
    const opens = instantOf(day, w.from, w.timezone);
    const closes = opens + length;
    if (opens <= nowMs && nowMs < closes) return { open: true, closesAt: closes };
    if (opens > nowMs && (next === undefined || opens < next)) next = opens;
  }
  // Reached only with no days at all, which the schema refuses: never open.
  return { open: false, opensAt: next ?? Number.POSITIVE_INFINITY };
}

interface LocalDate {
  y: number;
  m: number;
  d: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall clock in `zone` at `ms`, as if it were UTC (ms). */
function wallClock(ms: number, zone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(ms)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
}

function localDate(ms: number, zone: string): LocalDate {
  const w = new Date(wallClock(ms, zone));
  return { y: w.getUTCFullYear(), m: w.getUTCMonth(), d: w.getUTCDate() };
}

function addDays(day: LocalDate, n: number): LocalDate {
  const t = new Date(Date.UTC(day.y, day.m, day.d + n));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth(), d: t.getUTCDate() };
}

function weekday(day: LocalDate): number {
  return new Date(Date.UTC(day.y, day.m, day.d)).getUTCDay();
}

/**
 * The instant the wall clock in `zone` reads `minutes` on `day`. Across a gap (clocks forward) the first instant
 * after it; across an overlap (clocks back) the first of the two.
 */
function instantOf(day: LocalDate, minutes: number, zone: string): number {
  const wanted = Date.UTC(day.y, day.m, day.d) + minutes * MINUTE;
  // Offsets around the wanted wall time: before and after a change, at most one of them applies.
  const candidates = [wanted - 36 * 60 * MINUTE, wanted + 36 * 60 * MINUTE].map((probe) => wallClock(probe, zone) - probe);
  const exact = candidates.map((offset) => wanted - offset).filter((t) => wallClock(t, zone) === wanted);
  if (exact.length) return Math.min(...exact);
  // A time the clock skips: the moment the clock jumps, found by bisection between the two offsets' instants.
  let lo = Math.min(...candidates.map((o) => wanted - o));
  let hi = Math.max(...candidates.map((o) => wanted - o));
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallClock(mid, zone) < wanted) lo = mid;
    else hi = mid;
  }
  return hi - (hi % 1000);
}
