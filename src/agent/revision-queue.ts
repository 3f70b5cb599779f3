// The agent's one loop: a queue that keeps only the newest revision (a burst collapses to it, SPEC §7), takes one at a
// time through the spine (take-revision.ts), rechecks commits held at the rollout gate between revisions, and tries
// again a revision that failed for a passing reason.
import { backoffMs } from '../core/backoff.js';
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import type { Emit } from './agent-events.js';
import type { RevisionOutcome } from './revision-steps.js';

export interface RevisionQueueOptions {
  take: (rev: Revision) => Promise<RevisionOutcome>;
  /** Reads the rollout gate again for the held commits (rollout-holds.ts). */
  recheck: () => Promise<void>;
  hasHolds: () => boolean;
  /** A revision was refused: the agent may read back the one it applied last (agent.ts). */
  afterRefusal?: (rev: Revision) => void;
  emit: Emit;
  log: Logger;
  /** First retry delay, doubling up to 16 times it. */
  retryMs: number;
}

export class RevisionQueue {
  private pendingRev?: Revision;
  private running?: Promise<void>;
  private recheckWanted = false;
  // The source offers each content once: a revision that failed for a passing reason (a full disk, the clock) would
  // otherwise never be applied, however long the device keeps running the previous one.
  private unfinished?: Revision;
  private retryTimer?: NodeJS.Timeout;
  private retries = 0;

  constructor(private readonly opts: RevisionQueueOptions) {}

  get pending(): Revision | undefined {
    return this.pendingRev;
  }

  /** Hands a revision to the loop; one waiting for its turn is superseded. */
  enqueue(r: Revision): void {
    if (this.pendingRev) {
      this.opts.log.info({ revision: this.pendingRev.id, newer: r.id }, 'superseded before it was applied');
      this.opts.emit('superseded', { revision: this.pendingRev.id, by: r.id });
    }
    this.pendingRev = r;
    this.kick();
  }

  /** The held commits are read again when the loop is free. */
  requestRecheck(): void {
    if (!this.opts.hasHolds()) return;
    this.recheckWanted = true;
    this.kick();
  }

  /** What the source found since replaces the revision waiting to be tried again. */
  forgetRetry(): void {
    this.unfinished = undefined;
  }

  /** Someone asked (keystonectl sync, after freeing space): the revision waiting to be tried again goes now. */
  retryNow(): void {
    if (this.unfinished) this.retryUnfinished();
  }

  /** Resolves when no revision is pending or being taken. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Drops what has not begun; the revision being taken ends by the engine's interrupt. */
  close(): void {
    clearTimeout(this.retryTimer);
    this.unfinished = undefined;
    if (this.pendingRev) this.opts.log.info({ revision: this.pendingRev.id }, 'not applied: the agent is stopping');
    this.pendingRev = undefined;
  }

  private kick(): void {
    if (!this.running) this.running = this.drain().finally(() => (this.running = undefined));
  }

  private async drain(): Promise<void> {
    while (this.pendingRev || this.recheckWanted) {
      if (!this.pendingRev) {
        this.recheckWanted = false;
        try {
          await this.opts.recheck();
        } catch (e) {
          this.opts.log.error({ err: e as Error }, 'the rollout gate failed unexpectedly');
        }
        continue;
      }
      const rev = this.pendingRev;
      this.pendingRev = undefined;
      try {
        const o = await this.opts.take(rev);
        if (o.kind === 'rejected') {
          if (o.passing && !this.pendingRev) this.retryLater(rev);
          this.opts.afterRefusal?.(rev);
        }
        if (o.kind === 'deferred' && !this.pendingRev) this.retryLater(rev);
        if (this.unfinished !== rev) this.retries = 0;
      } catch (e) {
        this.opts.log.error({ revision: rev.id, err: e as Error }, 'revision failed unexpectedly');
        if (!this.pendingRev) this.retryLater(rev);
      }
    }
  }

  private retryUnfinished(): void {
    clearTimeout(this.retryTimer);
    const r = this.unfinished;
    this.unfinished = undefined;
    if (r && !this.pendingRev) {
      this.opts.log.info(
        { revision: r.id, attempt: this.retries + 1 },
        'trying again a revision that could not be applied',
      );
      this.enqueue(r);
    }
  }

  /** A revision not taken up now (deferred, from a held commit's gate): offered again after the retry delay. */
  later(r: Revision): void {
    if (!this.pendingRev) this.retryLater(r);
  }

  private retryLater(r: Revision): void {
    this.unfinished = r;
    const delayMs = backoffMs(this.retries++, { baseMs: this.opts.retryMs, maxDoublings: 4 });
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.retryUnfinished(), delayMs);
    this.retryTimer.unref();
    this.opts.log.warn(
      { revision: r.id, retry_in_ms: delayMs },
      'still running the previous revision; this one is tried again at the next look (keystonectl sync) or after the delay',
    );
  }
}
