// The status outbox (SPEC §5, §8): every status is written to the state store, one row per reporter, before any
// delivery is tried, so a crash, a restart or a server that is down loses nothing. One loop delivers the rows:
// per (reporter, commit) strictly in the order they were written (`pending` before `success`: a reporter must never
// show an old state over a newer one), across commits and reporters independently, so one unreachable server or one
// rejected commit does not hold up the rest. Delivery is at least once: a row delivered just before a crash is sent
// again after it, which both reporters tolerate (a status is replaced by an equal one). A server that says when to
// come back (Retry-After, a rate limit) holds every row of that reporter until then, not only the one it refused:
// sending the next commit's status to a server that just said "wait" only earns a longer wait. The hold is kept in
// memory; after a restart the first request finds it out again (one request, then held again).
import { backoffMs } from '../core/backoff.js';
import type { OutboxCounts, OutboxEntry, StateStore } from '../store/state-store.js';
import {
  checkStatus,
  isStatusDeliveryError,
  type CommitStatus,
  type DeliveryNotice,
  type StatusReporter,
} from './commit-status.js';
import { outboxRows, statusOfRow } from './outbox-rows.js';
import {
  DEFAULT_OUTBOX_RETENTION,
  type OutboxLog,
  type OutboxTimers,
  type StatusOutboxOptions,
} from './status-outbox-options.js';

/** last_error is for an operator to read, not an archive of response bodies. */
const MAX_ERROR_CHARS = 1_000;

const SILENT: OutboxLog = { info: () => undefined, warn: () => undefined, error: () => undefined };
const GLOBAL_TIMERS: OutboxTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * Exponential backoff with "equal jitter": half the delay is fixed, half random, so a fleet of devices that lost
 * the same server does not come back in lockstep, yet no retry is ever immediate. Pure; exported for tests.
 */
export function backoffDelay(attempts: number, random: number, initialMs: number, maxMs: number): number {
  return backoffMs(attempts - 1, { baseMs: initialMs, capMs: maxMs, jitter: { kind: 'equal', random } });
}

export class StatusOutbox {
  private readonly store: StateStore;
  private readonly reporters: ReadonlyMap<string, StatusReporter>;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly timers: OutboxTimers;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly maxAttempts: number;
  private readonly retention: number;
  private readonly log: OutboxLog;

  private running: Promise<void> | undefined;
  private rerun = false;
  private forceRequested = false;
  private timer: unknown;
  private closed = false;
  /** Reporter name → ms until which none of its rows is sent (the server asked us to wait). */
  private readonly heldUntil = new Map<string, number>();

  constructor(opts: StatusOutboxOptions) {
    this.store = opts.store;
    const names = opts.reporters.map((r) => r.name);
    if (new Set(names).size !== names.length)
      throw new Error(`status reporters must have distinct names, got ${names.join(', ')}`);
    this.reporters = new Map(opts.reporters.map((r) => [r.name, r]));
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
    this.timers = opts.timers ?? GLOBAL_TIMERS;
    this.initialBackoffMs = opts.initialBackoffMs ?? 1_000;
    this.maxBackoffMs = opts.maxBackoffMs ?? 300_000;
    this.maxAttempts = opts.maxAttempts ?? Number.POSITIVE_INFINITY;
    this.retention = opts.retention ?? DEFAULT_OUTBOX_RETENTION;
    this.log = opts.log ?? SILENT;
  }

  /**
   * Starts delivering what an earlier run left in the store. Separate from the constructor so a caller can
   * build the outbox, wire it, and decide when the network traffic begins.
   */
  start(): void {
    this.schedule();
  }

  /** Writes one row per reporter (durable when this returns), then wakes the loop. Returns the row ids. */
  enqueue(status: CommitStatus): number[] {
    if (this.closed) throw new Error('status outbox is closed');
    checkStatus(status);
    const ids = this.store.enqueueOutbox(outboxRows(status, [...this.reporters.keys()]));
    this.schedule();
    return ids;
  }

  /** Open rows (not yet delivered nor given up): the metric `keystone_status_outbox_pending`. */
  pending(): number {
    return this.store.outboxCounts().open;
  }

  counts(): OutboxCounts {
    return this.store.outboxCounts();
  }

  /**
   * Tries every open row now, ignoring backoff (each at most once per flush unless an earlier row of its commit
   * was delivered meanwhile), and resolves when that is done. For tests and for a graceful shutdown. A reporter
   * whose server asked us to wait stays on hold: our backoff is ours to skip, its rate limit is not.
   */
  async flush(): Promise<void> {
    this.forceRequested = true;
    this.schedule();
    await this.idle();
  }

  /** Resolves when no delivery is in flight and nothing is due before the next timer. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops the loop after the deliveries in flight have been recorded. Does not close the store. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    await this.idle();
  }

  // ---- the loop ----

  private schedule(): void {
    if (this.closed) return;
    if (this.running) {
      this.rerun = true;
      return;
    }
    this.clearTimer();
    this.running = this.drain().finally(() => {
      this.running = undefined;
    });
  }

  private async drain(): Promise<void> {
    // Rows that failed during this drain: a forced drain must not hammer them once per pass.
    const failed = new Set<number>();
    let force = false;
    try {
      do {
        this.rerun = false;
        if (this.forceRequested) {
          force = true;
          this.forceRequested = false;
        }
        const progressed = await this.pass(force, failed);
        if (progressed) this.rerun = true;
      } while (this.rerun && !this.closed);
      this.arm();
    } catch (e) {
      // The store itself failed (closed under us, disk full): nothing to deliver against, so say so and stop.
      this.log.error({ err: e }, 'status outbox stopped: the state store failed');
    }
  }

  /** One round over the heads that are due; true when some row finished (so the next row of its commit may be due). */
  private async pass(force: boolean, failed: Set<number>): Promise<boolean> {
    const now = this.now();
    // A row never tried is due whatever its time says: `at` comes from the caller's clock, which may run ahead.
    const due = this.store
      .outboxHeads()
      .filter(
        (h) =>
          this.reporters.has(h.reporter) &&
          !this.held(h.reporter, now) &&
          !failed.has(h.id) &&
          (force || h.attempts === 0 || (h.nextAttemptAt ?? 0) <= now),
      );
    if (!due.length) return false;
    const byReporter = new Map<string, OutboxEntry[]>();
    for (const h of due) byReporter.set(h.reporter, [...(byReporter.get(h.reporter) ?? []), h]);
    let finished = false;
    await Promise.all(
      [...byReporter].map(async ([name, entries]) => {
        const reporter = this.reporters.get(name) as StatusReporter;
        // One at a time per reporter: a server that is down is found out once, not once per commit.
        for (const entry of entries) {
          if (this.closed) return;
          const outcome = await this.attempt(reporter, entry);
          if (outcome === 'retry') failed.add(entry.id);
          else finished = true;
          if (this.held(name, this.now())) return; // it said "wait": the rest of its rows wait too
        }
      }),
    );
    if (finished) this.store.pruneOutbox(this.retention);
    return finished;
  }

  /** True while the reporter is on hold; forgets a hold that has run out. */
  private held(reporter: string, now: number): boolean {
    const until = this.heldUntil.get(reporter);
    if (until === undefined) return false;
    if (until > now) return true;
    this.heldUntil.delete(reporter);
    return false;
  }

  private async attempt(reporter: StatusReporter, entry: OutboxEntry): Promise<'delivered' | 'retry' | 'given-up'> {
    const status = statusOfRow(entry);
    const fields = { reporter: reporter.name, commit: entry.commit, state: entry.state, attempts: entry.attempts + 1 };
    let notice: DeliveryNotice | void;
    try {
      notice = await reporter.deliver(status);
    } catch (e) {
      const attempts = entry.attempts + 1;
      // Anything not classified by the reporter is treated as transient: better a retry too many than a lost status.
      const retryable = !isStatusDeliveryError(e) || e.retryable;
      const code = isStatusDeliveryError(e) ? e.code : 'KS_STATUS_UNEXPECTED';
      const lastError = `${code}: ${e instanceof Error ? e.message : String(e)}`.slice(0, MAX_ERROR_CHARS);
      // A server that says when to come back (429, Retry-After) is believed, within the cap, for all its rows.
      const askedMs = isStatusDeliveryError(e) ? e.data.retryAfterMs : undefined;
      const holdMs = askedMs === undefined ? undefined : Math.min(askedMs, this.maxBackoffMs);
      if (holdMs !== undefined)
        this.heldUntil.set(reporter.name, Math.max(this.heldUntil.get(reporter.name) ?? 0, this.now() + holdMs));
      if (!retryable || attempts >= this.maxAttempts) {
        this.store.giveUpOutbox(entry.id, { attempts, lastError });
        this.log.error(
          { ...fields, code, error: lastError },
          retryable ? 'commit status given up after too many attempts' : 'commit status rejected; not retrying',
        );
        return 'given-up';
      }
      const delay = Math.max(
        backoffDelay(attempts, this.random(), this.initialBackoffMs, this.maxBackoffMs),
        holdMs ?? 0,
      );
      this.store.retryOutbox(entry.id, { attempts, nextAttemptAt: this.now() + delay, lastError });
      this.log.warn(
        { ...fields, code, error: lastError, retry_in_ms: delay },
        'commit status not delivered; will retry',
      );
      return 'retry';
    }
    this.store.markOutboxDelivered(entry.id, this.now());
    this.log.info(fields, 'commit status delivered');
    // Delivered, but not as usual (a notes ref replaced): the operator hears of it once, here.
    if (notice) this.log.warn({ ...fields, code: notice.code }, notice.message);
    return 'delivered';
  }

  /** Sets one timer for the earliest open row that waits on backoff or on its reporter's hold. */
  private arm(): void {
    if (this.closed) return;
    let next: number | undefined;
    for (const h of this.store.outboxHeads()) {
      if (!this.reporters.has(h.reporter) || h.nextAttemptAt === undefined) continue;
      const at = Math.max(h.attempts === 0 ? this.now() : h.nextAttemptAt, this.heldUntil.get(h.reporter) ?? 0);
      next = next === undefined ? at : Math.min(next, at);
    }
    if (next === undefined) return;
    this.clearTimer();
    this.timer = this.timers.setTimeout(
      () => {
        this.timer = undefined;
        this.schedule();
      },
      Math.max(0, next - this.now()),
    );
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
