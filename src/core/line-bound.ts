// One bound for every line the agent reads or keeps: a component's output line (a log tail, a follow, an install
// script's stderr), a failure reason, a summary, a log field. A component decides how long its lines are — one
// 300 MB line, or a progress bar redrawn with `\r` and never a newline — and the agent must not hold, store or
// log more than this of any of them. What is cut says so, with how many bytes: `… [cut: N bytes] `.

/** The most of one line the agent keeps, in bytes of UTF-8. */
export const MAX_LINE_BYTES = 16 * 1024;

/**
 * The most of a reason made of a component's output (an install script's last stderr lines): a line's bound less
 * room for what is said before it (`install failed: `, a component's name), so the whole stays within one bound.
 */
export const MAX_REASON_BYTES = MAX_LINE_BYTES - 1024;

/** What a reader is told in place of the bytes left out; `atLeast` when the line began before what was read. */
export function cutMarker(bytes: number, atLeast = false): string {
  return `… [cut: ${atLeast ? 'at least ' : ''}${bytes} bytes] `;
}

/** Matches every cut marker, for whoever must treat the text either side of one (status/scrub-values.ts). */
export const CUT_MARKER_RE = /… \[cut: (?:at least )?\d+ bytes\] /g;

/**
 * `bytes` as text, at most `max` bytes of it: its end, after a marker saying how much was cut (`dropped` bytes that
 * the caller left out before these, plus what is cut here). The end is kept because the end of a component's output
 * is what explains it (an install script's last words). A cut never leaves half a character behind.
 */
export function keepEnd(bytes: Buffer, max = MAX_LINE_BYTES, dropped = 0, atLeast = false): string {
  let from = bytes.length > max ? bytes.length - max : 0;
  if (from === 0 && dropped === 0 && !atLeast) return bytes.toString('utf8');
  // UTF-8 continuation bytes (10xxxxxx) belong to a character whose start was cut.
  while (from < bytes.length && (bytes[from]! & 0xc0) === 0x80) from++;
  return cutMarker(dropped + from, atLeast) + bytes.subarray(from).toString('utf8');
}

/**
 * `text` in at most `max` bytes of UTF-8, marker included: unchanged when it fits, else its first eighth and its end
 * with the marker between them. For text the agent composes and keeps (a reason, a summary, a log field): the head
 * names what failed (`install script of api exited with 1:`), the end says why.
 */
export function cutLine(text: string, max = MAX_LINE_BYTES): string {
  // Cheap first: a string of n UTF-16 units is at most 3n bytes of UTF-8.
  if (text.length * 3 <= max) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  // Room for the marker with as many digits as the whole length has (at least what it will say), and a space.
  const room = max - Buffer.byteLength(cutMarker(bytes.length)) - 1;
  let head = Math.floor(room / 8);
  while (head > 0 && (bytes[head]! & 0xc0) === 0x80) head--;
  let tail = bytes.length - (room - head);
  while (tail < bytes.length && (bytes[tail]! & 0xc0) === 0x80) tail++;
  return `${bytes.subarray(0, head).toString('utf8')} ${cutMarker(tail - head)}${bytes.subarray(tail).toString('utf8')}`;
}
