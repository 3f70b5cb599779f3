// Refused requests in the agent's log, bounded (issue 13, finding 8): a client that keeps being refused (a script
// without the token, a scanner, a page trying DNS rebinding) must not be able to fill a device's log or disk. The
// first refusal from a source is logged at once with its details; later ones from that source are counted, and
// summed up in one line per source per interval while they go on. A source quiet for a whole interval is forgotten,
// so that its next refusal is logged in full again.
import type { Logger } from '../log/logger.js';

/** One summary line per source per minute at most. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;
/**
 * Sources followed one by one. Loopback alone has 16 million source addresses (127.0.0.0/8): past this many in one
 * interval, the others share one count, so that neither the log nor this table grows with the number of addresses.
 */
export const MAX_REFUSAL_SOURCES = 256;
/** The shared count of sources beyond MAX_REFUSAL_SOURCES (each kind of refusal counts its sources). */
export const OTHER_SOURCES = 'other sources';

/** Cancels what `every` scheduled. */
type Cancel = () => void;

export interface RefusalLogOptions {
  log?: Logger;
  /** ms clock. */
  now: () => number;
  intervalMs?: number;
  maxSources?: number;
  /** Runs `fn` every `ms` until cancelled; the default is an unref'd setInterval (it never holds the agent's exit). */
  every?: (fn: () => void, ms: number) => Cancel;
}

interface SourceWindow {
  msg: string;
  /** The address, or OTHER_SOURCES. */
  source: string;
  since: number;
  /** Refusals since `since` that were not logged one by one. */
  count: number;
  /** Their codes (KS_TOKEN_MISSING …) with a count each. */
  codes: Record<string, number>;
}

const windowKey = (msg: string, source: string) => `${msg}\0${source}`;

const unrefInterval = (fn: () => void, ms: number): Cancel => {
  const t = setInterval(fn, ms);
  t.unref();
  return () => clearInterval(t);
};

export class RefusalLog {
  private readonly windows = new Map<string, SourceWindow>();
  private readonly intervalMs: number;
  private readonly maxSources: number;
  private cancel: Cancel | undefined;

  constructor(private readonly opts: RefusalLogOptions) {
    this.intervalMs = opts.intervalMs ?? REFUSAL_LOG_INTERVAL_MS;
    this.maxSources = opts.maxSources ?? MAX_REFUSAL_SOURCES;
  }

  /**
   * A refused request from `source` (an address, or `unix socket`). `msg` is the kind of refusal (`API request
   * refused`, `webhook refused: bad signature`): each kind is counted apart, so that the first of one is never hidden
   * by many of another. `fields` go on the line when it is logged.
   */
  refused(source: string, code: string, fields: Record<string, unknown>, msg: string): void {
    this.flush();
    let key = windowKey(msg, source);
    if (!this.windows.has(key) && this.windows.size >= this.maxSources) key = windowKey(msg, OTHER_SOURCES);
    const w = this.windows.get(key);
    if (w) {
      w.count++;
      w.codes[code] = (w.codes[code] ?? 0) + 1;
      return;
    }
    this.windows.set(key, { msg, source: key.slice(msg.length + 1), since: this.opts.now(), count: 0, codes: {} });
    this.opts.log?.warn({ ...fields, source, code }, msg);
    this.cancel ??= (this.opts.every ?? unrefInterval)(() => this.flush(), this.intervalMs);
  }

  /** Sums up every source whose interval is over (called on each refusal and by the timer). */
  flush(): void {
    const now = this.opts.now();
    for (const [key, w] of this.windows) if (now - w.since >= this.intervalMs) this.summarise(key, w, now);
    if (this.windows.size === 0) this.stopTimer();
  }

  /** Sums up every source now, whatever is left of its interval (the server is closing). */
  close(): void {
    const now = this.opts.now();
    for (const [key, w] of this.windows) this.summarise(key, w, now);
    this.windows.clear();
    this.stopTimer();
  }

  private summarise(key: string, w: SourceWindow, now: number): void {
    if (w.count === 0) {
      this.windows.delete(key);
      return;
    }
    const seconds = Math.max(1, Math.round((now - w.since) / 1000));
    this.opts.log?.warn(
      { source: w.source, refused: w.count, codes: w.codes, seconds },
      `${w.msg}: ${w.count} more from ${w.source} in the last ${seconds}s`,
    );
    // A source that goes on gets its next line an interval from now; one that stops is forgotten after it.
    this.windows.set(key, { ...w, since: now, count: 0, codes: {} });
  }

  private stopTimer(): void {
    this.cancel?.();
    this.cancel = undefined;
  }
}
