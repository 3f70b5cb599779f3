// Component output split into lines as it streams in, each line held to MAX_LINE_BYTES: a line that never ends (a
// progress bar redrawn with `\r`) costs at most twice the bound in memory, however long it grows, and is delivered
// as its end once it does end (or the reader stops), after a marker saying how much was cut.
import { keepEnd, MAX_LINE_BYTES } from '../core/line-bound.js';

export class LineCutter {
  private parts: Buffer[] = [];
  private held = 0;

  /** Bytes of the current line already let go. */
  private dropped = 0;
  private atLeast = false;

  /** `before`: the stream starts inside a line, this many bytes of which came before (a follow from a tail's cut). */
  constructor(
    private readonly max = MAX_LINE_BYTES,
    before?: { skipped: number; atLeast: boolean },
  ) {
    this.dropped = before?.skipped ?? 0;
    this.atLeast = before?.atLeast ?? false;
  }

  /** The lines this chunk completes (without their newlines), each cut to the bound, keeping its end. */
  push(chunk: Buffer): string[] {
    const out: string[] = [];
    let from = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, from)) {
      this.add(chunk.subarray(from, nl));
      out.push(this.take());
      from = nl + 1;
    }
    if (from < chunk.length) this.add(chunk.subarray(from));
    return out;
  }

  /** The unfinished last line, cut the same way; undefined when there is none. */
  end(): string | undefined {
    return this.held === 0 && this.dropped === 0 ? undefined : this.take();
  }

  private add(piece: Buffer): void {
    if (piece.length === 0) return;
    // A copy: the caller's buffer may be reused for its next read.
    this.parts.push(Buffer.from(piece));
    this.held += piece.length;
    if (this.held <= 2 * this.max) return;
    // Compacted to its last `max` bytes once twice that is held: memory stays bounded, copying stays linear.
    const all = Buffer.concat(this.parts);
    this.dropped += all.length - this.max;
    this.parts = [all.subarray(all.length - this.max)];
    this.held = this.max;
  }

  private take(): string {
    const line = keepEnd(Buffer.concat(this.parts), this.max, this.dropped, this.atLeast);
    this.parts = [];
    this.held = 0;
    this.dropped = 0;
    this.atLeast = false;
    return line;
  }
}
