// The options of a StatusOutbox: the store and reporters, its clock, timers and log, and the bounds of its retries.
// Apart from status-outbox.ts, whose delivery loop is long enough on its own; tests build these options too.
import type { StateStore } from '../store/state-store.js';
import type { StatusReporter } from './commit-status.js';

export interface OutboxTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The subset of a pino logger the outbox writes to. */
export interface OutboxLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface StatusOutboxOptions {
  store: StateStore;
  reporters: readonly StatusReporter[];
  /** ms clock; default Date.now. */
  now?: () => number;
  /** [0, 1) for the backoff jitter; default Math.random. */
  random?: () => number;
  /** Default: the global timers, unref'd (a pending retry never keeps the process alive). */
  timers?: OutboxTimers;
  /** Delay after the first failure; doubles per attempt up to maxBackoffMs. Defaults 1 s and 5 min. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Retryable failures are given up after this many attempts; default unlimited (a device may be offline for days). */
  maxAttempts?: number;
  /** Finished (delivered or given-up) rows kept for inspection; older ones are deleted. Default DEFAULT_OUTBOX_RETENTION. */
  retention?: number;
  log?: OutboxLog;
}

export const DEFAULT_OUTBOX_RETENTION = 500;
