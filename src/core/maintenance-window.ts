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
  // `to` on the wall clock of the day it falls on: a window over a daylight saving change is as long as the clock says.
  const overnight = w.to <= w.from;
  const today = localDate(nowMs, w.timezone);
  let next: number | undefined;
  // From yesterday (a window that opened yesterday evening may still be open) to a week ahead.
  for (let d = -1; d < SEARCH_DAYS; d++) {
    const day = addDays(today, d);
    if (!w.days.includes(WEEKDAYS[weekday(day)]!)) continue;
    const opens = instantOf(day, w.from, w.timezone);
    // A window wholly inside the hour the clocks skip would be empty that night: it keeps its length instead.
    const wallEnd = instantOf(overnight ? addDays(day, 1) : day, w.to, w.timezone);
    const closes = wallEnd > opens ? wallEnd : opens + ((overnight ? w.to + 24 * 60 : w.to) - w.from) * MINUTE;
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
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
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
  const candidates = [wanted - 36 * 60 * MINUTE, wanted + 36 * 60 * MINUTE].map(
    (probe) => wallClock(probe, zone) - probe,
  );
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

/** `Tue 02:00 Europe/Berlin`: when a closed window next opens, on its own wall clock. */
export function describeOpening(w: MaintenanceWindow, opensAt: number): string {
  if (!Number.isFinite(opensAt)) return 'never';
  const wall = new Date(wallClock(opensAt, w.timezone));
  const day = WEEKDAYS[wall.getUTCDay()]!;
  const hh = String(wall.getUTCHours()).padStart(2, '0');
  const mm = String(wall.getUTCMinutes()).padStart(2, '0');
  return `${day[0]!.toUpperCase()}${day.slice(1)} ${hh}:${mm} ${w.timezone}`;
}

/** `3h12m`, `45m`, `20s`: how long until `at`, to the minute past a minute. */
export function describeWait(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.ceil(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  return `${Math.floor(h / 24)}d${h % 24 ? `${h % 24}h` : ''}`;
}

/** `mon,tue 02:00-04:00 Europe/Berlin`: a window in one line (the agent's --window, and how it is shown). */
export function formatWindow(w: MaintenanceWindow): string {
  const t = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  return `${w.days.join(',')} ${t(w.from)}-${t(w.to)} ${w.timezone}`;
}

/** What is wrong with a window's parts, or undefined: the one check of the fleet file's and the agent's. */
export function windowProblem(w: {
  days: readonly string[];
  from: string;
  to: string;
  timezone: string;
}): { key: 'days' | 'from' | 'to' | 'timezone'; message: string } | undefined {
  if (w.days.length === 0)
    return { key: 'days', message: 'names no day: a window that never opens holds every revision for ever' };
  const bad = w.days.find((d) => !(WEEKDAYS as readonly string[]).includes(d));
  if (bad !== undefined) return { key: 'days', message: `"${bad}" is not a day: use ${WEEKDAYS.join(', ')}` };
  const from = parseClockTime(w.from);
  if (from === undefined || from === 24 * 60)
    return { key: 'from', message: `"${w.from}" is not a time of day: use "HH:MM", 00:00 to 23:59` };
  const to = parseClockTime(w.to);
  if (to === undefined) return { key: 'to', message: `"${w.to}" is not a time of day: use "HH:MM", 00:00 to 24:00` };
  if (to === from)
    return {
      key: 'to',
      message:
        'the window ends when it begins: for a whole day write from = "00:00", to = "24:00" (one whose to is before its from runs past midnight into the next day)',
    };
  if (!isTimezone(w.timezone))
    return {
      key: 'timezone',
      message: `"${w.timezone}" is not a timezone this device knows: use an IANA name such as "Europe/Berlin" or "UTC"`,
    };
  return undefined;
}

/** The window of checked parts. */
export function toWindow(w: {
  days: readonly string[];
  from: string;
  to: string;
  timezone: string;
}): MaintenanceWindow {
  return {
    days: [...new Set(w.days)] as Weekday[],
    from: parseClockTime(w.from)!,
    to: parseClockTime(w.to)!,
    timezone: w.timezone,
  };
}

/** `mon,tue 02:00-04:00 Europe/Berlin` as given to --window; a problem's text when it is not one. */
export function parseWindowText(text: string): MaintenanceWindow | string {
  const m = /^\s*([a-z,]+)\s+(\d\d:\d\d)-(\d\d:\d\d)\s+(\S+)\s*$/.exec(text);
  if (!m) return `"${text}" is not a window: write "mon,tue 02:00-04:00 Europe/Berlin" (days, from-to, timezone)`;
  const parts = { days: m[1]!.split(',').filter(Boolean), from: m[2]!, to: m[3]!, timezone: m[4]! };
  const p = windowProblem(parts);
  return p ? `${p.key}: ${p.message}` : toWindow(parts);
}
