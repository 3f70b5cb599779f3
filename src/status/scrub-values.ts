// What a device publishes about a failure (the note on the commit, a GitHub status) is read by everyone who can read
// the repository, every other device included; a reason may quote a component's output, and an install script that
// echoes its configuration would publish it. Before a reason leaves the device, every value the component was given
// (configuration, binds, environment, and secrets once there are any) is replaced by its name: `[config:token]`.
// The device keeps the reason whole (API, dashboard, history): only the published copy is scrubbed.
import { CUT_MARKER_RE } from '../core/line-bound.js';

/** A value a component was given, and what stands in for it: `{ label: '[config:token]', value: 's3cr3t-…' }`. */
export interface GivenValue {
  label: string;
  value: string;
}

/**
 * Values shorter than this are left in the text: `1`, `on`, `true` or `off` would be replaced inside every word and
 * number that contains them, and say nothing a reader could not guess. A value meant to be secret is longer.
 */
export const MIN_SCRUB_LENGTH = 4;

/**
 * `text` with every occurrence of every value (of MIN_SCRUB_LENGTH characters or more) replaced by its label, longest
 * values first and in one pass, so a label is never scrubbed again. A value of several lines is also scrubbed line by
 * line (output is joined with ` | `). Beside a cut marker (`… [cut: N bytes] `), where a value may have been cut in
 * two, a piece of a value is scrubbed too: the start of one just before the marker, the end of one just after it.
 */
export function scrubValues(text: string, given: readonly GivenValue[]): string {
  const values = expand(given);
  if (values.length === 0) return text;
  const hits: Array<{ start: number; end: number; label: string }> = [];
  for (const v of values) for (let i = text.indexOf(v.value); i >= 0; i = text.indexOf(v.value, i + 1)) hits.push({ start: i, end: i + v.value.length, label: v.label });
  for (const m of text.matchAll(CUT_MARKER_RE)) hits.push(...piecesAround(text, m.index, m.index + m[0].length, values));
  // Leftmost first, the longest of those that start together; overlaps give way to what came first.
  hits.sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let at = 0;
  for (const h of hits) {
    if (h.start < at) continue;
    out += text.slice(at, h.start) + h.label;
    at = h.end;
  }
  return out + text.slice(at);
}

/** Every value worth scrubbing, with its lines, longest first. */
function expand(given: readonly GivenValue[]): GivenValue[] {
  const out = new Map<string, GivenValue>();
  for (const g of given) {
    for (const v of [g.value, ...g.value.split(/\r?\n/).map((l) => l.trim())]) if ([...v].length >= MIN_SCRUB_LENGTH && !out.has(v)) out.set(v, { label: g.label, value: v });
  }
  return [...out.values()].sort((a, b) => b.value.length - a.value.length);
}

/** The longest value end right after a marker and value start right before it (the space cutLine puts there aside). */
function piecesAround(text: string, markerStart: number, markerEnd: number, values: readonly GivenValue[]): Array<{ start: number; end: number; label: string }> {
  const out: Array<{ start: number; end: number; label: string }> = [];
  const before = text[markerStart - 1] === ' ' ? markerStart - 1 : markerStart;
  let best: { start: number; end: number; label: string } | undefined;
  let bestAfter: typeof best;
  for (const v of values) {
    for (let n = v.value.length - 1; n >= MIN_SCRUB_LENGTH; n--) {
      if ((!best || n > best.end - best.start) && before - n >= 0 && text.slice(before - n, before) === v.value.slice(0, n)) best = { start: before - n, end: before, label: v.label };
      if ((!bestAfter || n > bestAfter.end - bestAfter.start) && text.startsWith(v.value.slice(-n), markerEnd)) bestAfter = { start: markerEnd, end: markerEnd + n, label: v.label };
    }
  }
  if (best) out.push(best);
  if (bestAfter) out.push(bestAfter);
  return out;
}
