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
  return scrubExpanded(text, expand(given), false);
}

/**
 * scrubValues with the values' forms worked out once, for text scrubbed often against the same values (every log line
 * against the agent's secrets). `edges`: the text's own start and end count as cuts too (a reason sliced to its first
 * 200 characters, a line kept from its end), so the start of a value at its very end, and the end of one at its very
 * start, are scrubbed as well.
 */
export function scrubber(given: readonly GivenValue[], o: { edges?: boolean } = {}): (text: string) => string {
  const values = expand(given);
  return (text) => scrubExpanded(text, values, o.edges === true);
}

function scrubExpanded(text: string, values: readonly GivenValue[], edges: boolean): string {
  if (values.length === 0) return text;
  const hits: Array<{ start: number; end: number; label: string }> = [];
  for (const v of values)
    for (let i = text.indexOf(v.value); i >= 0; i = text.indexOf(v.value, i + 1))
      hits.push({ start: i, end: i + v.value.length, label: v.label });
  for (const m of text.matchAll(CUT_MARKER_RE))
    hits.push(...piecesAround(text, m.index, m.index + m[0].length, values));
  if (edges) hits.push(...piecesAround(text, text.length, text.length, values), ...piecesAround(text, 0, 0, values));
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

/** Every value worth scrubbing, with its lines and the forms a program prints it in, longest first. */
function expand(given: readonly GivenValue[]): GivenValue[] {
  const out = new Map<string, GivenValue>();
  for (const g of given) {
    for (const v of [g.value, ...g.value.split(/\r?\n/).map((l) => l.trim())]) {
      if ([...v].length < MIN_SCRUB_LENGTH) continue;
      for (const form of [v, ...encodings(v)]) if (!out.has(form)) out.set(form, { label: g.label, value: form });
    }
  }
  return [...out.values()].sort((a, b) => b.value.length - a.value.length);
}

/** Bytes of a value whose base64 forms are scrubbed: shorter ones give runs of letters that occur in other text. */
const MIN_BASE64_BYTES = 9;

/**
 * The value as a program that logs it may have encoded it (issue 29's review: a log tail published a token inside a
 * JSON string, URL-encoded, and base64-encoded): JSON-escaped, URL-encoded, and base64 / base64url at each of the
 * three alignments a value can have inside a longer base64 text (the whole groups of three bytes from byte 0, 1, 2).
 */
function encodings(v: string): string[] {
  const out = new Set<string>([JSON.stringify(v).slice(1, -1), encodeURIComponent(v)]);
  const bytes = Buffer.from(v, 'utf8');
  for (let a = 0; a < 3; a++) {
    const whole = Math.floor((bytes.length - a) / 3) * 3;
    if (whole < MIN_BASE64_BYTES) continue;
    const part = bytes.subarray(a, a + whole);
    out.add(part.toString('base64'));
    out.add(part.toString('base64url'));
  }
  out.delete(v);
  return [...out].filter((f) => f.length >= MIN_SCRUB_LENGTH);
}

/** The longest value end right after a marker and value start right before it (the space cutLine puts there aside). */
function piecesAround(
  text: string,
  markerStart: number,
  markerEnd: number,
  values: readonly GivenValue[],
): Array<{ start: number; end: number; label: string }> {
  const out: Array<{ start: number; end: number; label: string }> = [];
  const before = text[markerStart - 1] === ' ' ? markerStart - 1 : markerStart;
  let best: { start: number; end: number; label: string } | undefined;
  let bestAfter: typeof best;
  for (const v of values) {
    for (let n = v.value.length - 1; n >= MIN_SCRUB_LENGTH; n--) {
      if (
        (!best || n > best.end - best.start) &&
        before - n >= 0 &&
        text.slice(before - n, before) === v.value.slice(0, n)
      )
        best = { start: before - n, end: before, label: v.label };
      if ((!bestAfter || n > bestAfter.end - bestAfter.start) && text.startsWith(v.value.slice(-n), markerEnd))
        bestAfter = { start: markerEnd, end: markerEnd + n, label: v.label };
    }
  }
  if (best) out.push(best);
  if (bestAfter) out.push(bestAfter);
  return out;
}
