// On `failure`, a report carries the failing components' last log lines (SPEC §8), so that whoever reads the note
// on the commit sees why without a cable to the device. A report is read by everyone who can read the repository, so
// each line is scrubbed of every value its component was given, exactly as the failure's description is
// (given-values.ts, status/scrub-values.ts), and stripped of control characters (a terminal or a PR comment shows
// it). Bounded: MAX_LOG_TAIL_LINES lines and MAX_LOG_TAIL_BYTES bytes in all, and only the end of each log file is
// read (a fixed number of bytes from the end, never the whole file: a component may have written gigabytes).
//
// Processes and containers alike: a process writes its stdout.log and stderr.log itself, and the agent copies a
// container's output into the same two files (runtime/container-log-pump.ts). The two files have no common clock
// per line, so a unit's lines are the older file's, then those of the file written last (usually stderr's, which
// says why).
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import { cutLine } from '../core/line-bound.js';
import { STDERR_LOG, STDOUT_LOG } from '../runtime/log-files.js';
import { MAX_LOG_TAIL_BYTES, MAX_LOG_TAIL_LINES } from '../report/commit-status.js';
import { MIN_SCRUB_LENGTH, scrubValues, type GivenValue } from '../secrets/scrub-values.js';
import { givenValues } from './given-values.js';

/** One unit whose log tells a failure: its name (`api`, `app/web`), its log directory, what it was given. */
export interface LogTailUnit {
  name: string;
  logDir: string;
  given: readonly GivenValue[];
}

export interface LogTailOptions {
  /** Bytes read from the end of each file; default DEFAULT_READ_BYTES. */
  readBytes?: number;
  /** Told of every read, with the bytes it returned (tests count them). */
  onRead?: (path: string, bytes: number) => void;
}

/**
 * What is read from the end of each file: four times what a report can carry, so lines that scrubbing and stripping
 * shorten, and blank ones, still leave a full tail. A line longer than this leaves nothing of itself (below).
 */
export const DEFAULT_READ_BYTES = 4 * MAX_LOG_TAIL_BYTES;

/** One line's bound, its `<component>: ` included: a single long line must not take every other line's place. */
export const MAX_LOG_LINE_BYTES = 256;

/**
 * The units of the failed names: a unit by its name, a composite's (or replicas') name by its members. `components`
 * may hold a name more than once (the desired state the apply carried out and what runs after a composite's
 * rollback): a unit's log is scrubbed of every value any of them was given. A name found nowhere is left out: with
 * nothing to scrub it against, none of its output may be published.
 */
export function failedUnits(
  failed: readonly string[],
  components: readonly DesiredComponent[],
  logDirOf: (name: string) => string,
): LogTailUnit[] {
  const given = new Map<string, GivenValue[]>();
  for (const c of components) given.set(c.name, [...(given.get(c.name) ?? []), ...givenValues(c)]);
  const names: string[] = [];
  for (const f of failed) {
    const units = given.has(f)
      ? [f]
      : [...given.keys()].filter((n) => components.some((c) => c.name === n && c.group === f) || n.startsWith(`${f}/`));
    for (const u of units) if (!names.includes(u)) names.push(u);
  }
  // Every unit gets at least one line of the budget: more units than lines would only be read for nothing.
  return names
    .slice(0, MAX_LOG_TAIL_LINES)
    .map((name) => ({ name, logDir: logDirOf(name), given: given.get(name) ?? [] }));
}

/**
 * The last lines of the units' logs, oldest first, each `<unit>: <text>`: at most MAX_LOG_TAIL_LINES lines and
 * MAX_LOG_TAIL_BYTES bytes (each line's bytes and a newline), shared among the units from each one's end, so every
 * failed unit says its last words. Never throws: a log that cannot be read gives no lines.
 */
export function failureLogTail(units: readonly LogTailUnit[], opts: LogTailOptions = {}): string[] {
  const perUnit = units.map((u) => unitLines(u, opts));
  const taken = perUnit.map(() => 0);
  const full = perUnit.map(() => false);
  let lines = 0;
  let bytes = 0;
  // Round robin from each unit's newest line back: a unit whose next line does not fit stops there (a tail with a hole
  // in it would read as if the lines were adjacent).
  for (let progress = true; progress && lines < MAX_LOG_TAIL_LINES;) {
    progress = false;
    perUnit.forEach((ls, i) => {
      if (full[i] || taken[i]! >= ls.length || lines >= MAX_LOG_TAIL_LINES) return;
      const cost = Buffer.byteLength(ls[ls.length - 1 - taken[i]!]!) + 1;
      if (bytes + cost > MAX_LOG_TAIL_BYTES) {
        full[i] = true;
        return;
      }
      taken[i]!++;
      lines++;
      bytes += cost;
      progress = true;
    });
  }
  return perUnit.flatMap((ls, i) => ls.slice(ls.length - taken[i]!));
}

/** A unit's publishable lines, oldest first: both its files' ends, the one written last last. */
function unitLines(u: LogTailUnit, opts: LogTailOptions): string[] {
  const files = [STDOUT_LOG, STDERR_LOG].map((f) => readEnd(join(u.logDir, f), opts)).filter((f) => f !== undefined);
  // Stable: with equal times stdout comes first, stderr (what says why, usually) last.
  files.sort((a, b) => a.mtimeMs - b.mtimeMs);
  const prefix = `${u.name}: `;
  const room = Math.max(64, MAX_LOG_LINE_BYTES - Buffer.byteLength(prefix));
  const out: string[] = [];
  for (const f of files)
    f.lines.forEach((raw, i) => {
      const text = publishable(raw, u.given, f.unfinished && i === f.lines.length - 1);
      if (text !== '') out.push(`${prefix}${cutLine(text, room)}`);
    });
  return out;
}

/**
 * The complete lines in the last `readBytes` of a file (a line that began before them is dropped: a piece of a line
 * could be a piece of a value, which scrubbing would not recognise), and whether the last one is unfinished.
 */
function readEnd(
  path: string,
  opts: LogTailOptions,
): { lines: string[]; mtimeMs: number; unfinished: boolean } | undefined {
  const want = Math.max(1, opts.readBytes ?? DEFAULT_READ_BYTES);
  let fd: number;
  try {
    // O_NOFOLLOW and O_NONBLOCK: a link or a FIFO planted where a log should be is neither followed nor waited on.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    // One byte more than wanted, to know whether the window starts at a line's start.
    const start = Math.max(0, st.size - want - 1);
    const buf = Buffer.alloc(st.size - start);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got);
      if (n === 0) break;
      got += n;
    }
    opts.onRead?.(path, got);
    let bytes = buf.subarray(0, got);
    if (start > 0) {
      const nl = bytes.indexOf(0x0a);
      bytes = nl < 0 ? Buffer.alloc(0) : bytes.subarray(nl + 1);
    }
    if (bytes.length === 0) return { lines: [], mtimeMs: st.mtimeMs, unfinished: false };
    const unfinished = bytes.at(-1) !== 0x0a;
    const text = bytes.toString('utf8');
    const lines = (unfinished ? text : text.slice(0, -1)).split('\n');
    return { lines, mtimeMs: st.mtimeMs, unfinished };
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Escape sequences whole (CSI, OSC, DCS/SOS/PM/APC strings, two-byte escapes), so no `[31m` is left behind. */
const ESCAPES =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /\x1b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -/]*[0-~]/g;

/**
 * One line as a report may carry it: scrubbed of the given values, then stripped of control characters, then
 * scrubbed again (a value an escape sequence had split is whole now). A carriage return redraws the line on a
 * terminal (a progress bar): only what was drawn last counts. `unfinished`: the file ends inside this line, which may
 * stop inside a value; the start of one at its end is scrubbed too. Blank → ''.
 */
function publishable(raw: string, given: readonly GivenValue[], unfinished: boolean): string {
  const drawn = scrubValues(raw, given)
    .split('\r')
    .filter((s) => s.trim() !== '')
    .at(-1);
  if (drawn === undefined) return '';
  const plain = drawn
    .replace(ESCAPES, '')
    .replace(/\t/g, ' ')
    .replace(/\p{Cc}/gu, '');
  let text = scrubValues(plain, given);
  if (unfinished) text = scrubUnfinishedEnd(text, given);
  return text.trimEnd();
}

/** `text` without the start of a value at its very end (MIN_SCRUB_LENGTH characters or more of it), its label instead. */
function scrubUnfinishedEnd(text: string, given: readonly GivenValue[]): string {
  let best: { n: number; label: string } | undefined;
  for (const g of given)
    for (const v of [g.value, ...g.value.split(/\r?\n/).map((l) => l.trim())])
      for (let n = Math.min(v.length - 1, text.length); n >= MIN_SCRUB_LENGTH && n > (best?.n ?? 0); n--)
        if (text.endsWith(v.slice(0, n))) {
          best = { n, label: g.label };
          break;
        }
  return best ? text.slice(0, text.length - best.n) + best.label : text;
}
