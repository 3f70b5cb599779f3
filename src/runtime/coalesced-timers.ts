// Timers that need no precision (health probes every few seconds, a restart budget given back after ten healthy
// minutes) share one Node timer, and their due times are rounded up to a grain: fifty components probed every 10 s
// wake the agent a few times per interval rather than fifty, and do their work together.

export interface CoalescedClock {
  now(): number;
}

type Entry = { at: number; fn: () => void };

/** One armed Node timer for every entry; entries due in the same grain run in the same wake-up. */
export class CoalescedTimers {
  private readonly entries = new Set<Entry>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;

  constructor(
    private readonly clock: CoalescedClock = { now: () => performance.now() },
    private readonly setTimer: (fn: () => void, ms: number) => NodeJS.Timeout = (fn, ms) => setTimeout(fn, ms),
    private readonly clearTimer: (t: NodeJS.Timeout) => void = (t) => clearTimeout(t),
  ) {}

  /** How many entries wait (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `fn` once, no earlier than `delayMs` from now and at most one grain later (`grainMs`, default a tenth of
   * the delay, within 10 ms … 1 s). Returns the cancel function.
   */
  schedule(delayMs: number, fn: () => void, grainMs = defaultGrain(delayMs)): () => void {
    const grain = Math.max(1, grainMs);
    const entry: Entry = { at: Math.ceil((this.clock.now() + Math.max(0, delayMs)) / grain) * grain, fn };
    this.entries.add(entry);
    if (entry.at < this.armedFor) this.arm(entry.at);
    return () => {
      this.entries.delete(entry);
      if (this.entries.size === 0) this.disarm();
    };
  }

  private arm(at: number): void {
    this.disarm();
    this.armedFor = at;
    this.timer = this.setTimer(() => this.fire(), Math.max(0, at - this.clock.now()));
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clearTimer(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    // Node may fire a millisecond early by our clock (it rounds): what is due within a millisecond runs now.
    const now = this.clock.now() + 1;
    const due = [...this.entries].filter((e) => e.at <= now);
    for (const e of due) this.entries.delete(e);
    for (const e of due) {
      try {
        e.fn();
      } catch {
        /* an entry's failure is its own: the others still run */
      }
    }
    let next = Infinity;
    for (const e of this.entries) next = Math.min(next, e.at);
    if (next < this.armedFor) this.arm(next);
  }
}

function defaultGrain(delayMs: number): number {
  return Math.min(1000, Math.max(10, Math.round(delayMs / 10)));
}

/** The agent's shared instance. */
export const coalescedTimers = new CoalescedTimers();
