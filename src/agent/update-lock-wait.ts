// The revision that waits for update locks (SPEC §19): at most one (the newest taken up; a newer one replaces it).
// Each lock it waits for is watched (a blocking flock of its own, so the release is seen the moment it happens, not
// at a poll); a release, or the first lock_timeout to pass, hands the revision back to the agent's loop, which tries
// its locks again. How long it has waited counts from when this agent first found it held.
import type { Logger } from '../log/logger.js';
import { waitUpdateLock, type HeldUpdateLock } from '../runtime/update-lock.js';
import type { Revision } from '../source/directory-source.js';
import { RevisionWait } from './revision-wait.js';
import { describeHolders, type LockHolder } from './update-locks.js';

/** What GET /v1/revision shows as `waiting`. */
export interface DeviceHold {
  revision: string;
  /** `held: api holds its update lock`. */
  reason: string;
  /** ms: when this agent first found the revision held. */
  since: number;
  holders: Array<{ component: string; lock: string; timeoutAt?: number }>;
  /** Held for the maintenance window: when it opens (ms). */
  opensAt?: number;
}

export interface UpdateLockWaitOptions {
  now: () => number;
  log: Logger;
  /** A lock was let go or a lock_timeout passed: the revision is taken up again. */
  retake: (rev: Revision) => void;
}

interface Waiting {
  rev: Revision;
  since: number;
  holders: LockHolder[];
  stop: AbortController;
  timer?: NodeJS.Timeout;
}

/** How long a lock the watcher got is kept for the retake before it is let go anyway (the retake never came). */
const KEEP_MS = 30_000;

export class UpdateLockWait extends RevisionWait {
  private w?: Waiting;
  /**
   * Locks the watchers got, kept for the retake: let go at once, a component that takes its lock again in a loop
   * would have it back before the retake tries (and the revision would wait for ever). The engine takes them over.
   */
  private readonly kept = new Map<string, HeldUpdateLock>();
  private keptTimer?: NodeJS.Timeout;

  constructor(private readonly o: UpdateLockWaitOptions) {
    super(o.now);
  }

  /** Whether `name`'s lock is no longer waited for by `revision`: its lock_timeout passed since the wait began. */
  timedOut(revision: string, timeoutMs: number | undefined): boolean {
    if (timeoutMs === undefined || this.started?.revision !== revision) return false;
    return this.o.now() - this.started.since >= timeoutMs;
  }

  /** `rev` found these locks held: wait for the first release (or timeout). The same revision keeps its start time. */
  wait(rev: Revision, holders: LockHolder[]): DeviceHold {
    const since = this.begin(rev.id);
    this.cancel();
    const stop = new AbortController();
    const w: Waiting = { rev, since, holders, stop };
    this.w = w;
    const again = (why: string) => {
      if (this.w !== w) return;
      this.o.log.info({ revision: rev.id, why }, 'update lock: trying the revision again');
      this.cancel();
      this.o.retake(rev);
    };
    for (const h of holders) {
      waitUpdateLock(h.workDir, h.lock, stop.signal).then(
        async (lock) => {
          if (this.w !== w) return void (await lock?.release());
          if (lock) this.keep(h.component, lock);
          again(`${h.component} let go of its update lock`);
        },
        (e: Error) => {
          if (!stop.signal.aborted) {
            this.o.log.warn(
              { revision: rev.id, component: h.component, err: e.message },
              'update lock: cannot watch it; trying the revision again',
            );
            again(`${h.component}'s lock could not be watched`);
          }
        },
      );
    }
    const timeouts = holders.flatMap((h) => (h.timeoutMs === undefined ? [] : [since + h.timeoutMs - this.o.now()]));
    if (timeouts.length) {
      w.timer = setTimeout(() => again('a lock_timeout passed'), Math.max(0, Math.min(...timeouts)));
      w.timer.unref();
    }
    return this.hold()!;
  }

  /** What waits, for status and the dashboard; undefined when nothing does. */
  hold(): DeviceHold | undefined {
    const w = this.w;
    if (!w) return undefined;
    return {
      revision: w.rev.id,
      reason: describeHolders(w.holders),
      since: w.since,
      holders: w.holders.map((h) => ({
        component: h.component,
        lock: h.lock,
        ...(h.timeoutMs !== undefined && { timeoutAt: w.since + h.timeoutMs }),
      })),
    };
  }

  private keep(component: string, lock: HeldUpdateLock): void {
    void this.kept.get(component)?.release();
    this.kept.set(component, lock);
    clearTimeout(this.keptTimer);
    this.keptTimer = setTimeout(() => void this.releaseKept(), KEEP_MS);
    this.keptTimer.unref();
  }

  /** The lock a watcher got for `component`, handed over (the caller lets go of it). */
  takeKept(component: string): HeldUpdateLock | undefined {
    const l = this.kept.get(component);
    this.kept.delete(component);
    return l;
  }

  /** The lock a watcher got for `component`, still kept. */
  peekKept(component: string): HeldUpdateLock | undefined {
    const l = this.kept.get(component);
    return l?.held ? l : undefined;
  }

  /** Lets go of what the watchers got and nobody took over (the retake ended without stopping them). */
  async releaseKept(): Promise<void> {
    clearTimeout(this.keptTimer);
    const locks = [...this.kept.values()];
    this.kept.clear();
    await Promise.all(locks.map((l) => l.release()));
  }

  /** Stops waiting: the revision is being taken up again, another replaced it, or the agent stops. */
  cancel(): void {
    const w = this.w;
    this.w = undefined;
    if (!w) return;
    w.stop.abort();
    clearTimeout(w.timer);
  }
}
