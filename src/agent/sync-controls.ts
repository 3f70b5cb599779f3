// The operator's hand on the loop: looks asked for now (POST /v1/sync, a webhook), a manual apply, and the suspension
// of the Git sync that a forced one sets until `keystonectl resume` (SPEC §9–10).
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import type { StateStore, SyncSuspension } from '../store/state-store.js';
import type { RevisionQueue } from './revision-queue.js';
import { isoTime } from '../core/iso-time.js';

/** What a manual apply was told at once; its progress follows as events. */
export interface ManualApplyAccepted {
  revision: string;
  planFile: string;
  /** True when this apply suspended the Git sync (--force on an agent that follows Git). */
  suspendedSync: boolean;
}

export interface SyncState {
  following: 'git' | 'directory';
  /** Present while a forced manual apply holds the Git sync. */
  suspended?: SyncSuspension;
  /** A revision the source found while suspended, applied on resume. */
  held?: string;
}

export class SyncControls {
  /** The newest revision the source offered while the sync was suspended. */
  private heldRev?: Revision;
  private look?: () => Promise<void>;
  private looking?: Promise<void>;
  private lookAgain = false;
  /** Why the last look failed; cleared by a look that succeeds. */
  private lookFailed?: string;

  constructor(
    private readonly o: {
      following: 'git' | 'directory';
      store: StateStore;
      queue: RevisionQueue;
      log: Logger;
      now: () => number;
    },
  ) {
    const s = o.store.syncSuspension();
    if (s)
      o.log.warn(
        { revision: s.revision, since: isoTime(s.since) },
        'the Git sync is suspended by a manual apply: run `keystonectl resume` to follow Git again',
      );
  }

  /** Why held commits may not be applied now, or undefined. */
  paused(): string | undefined {
    return this.o.following === 'git' && this.o.store.syncSuspension()
      ? 'the Git sync is suspended by a manual apply (`keystonectl resume` follows Git again)'
      : undefined;
  }

  /** A revision from the source: to the loop, or kept aside while the Git sync is suspended. */
  offer(r: Revision): void {
    this.o.queue.forgetRetry();
    // Only a Git sync is suspended: a development directory (say, after switching from --repo) is always followed.
    const suspension = this.o.following === 'git' ? this.o.store.syncSuspension() : undefined;
    if (suspension) {
      if (this.heldRev?.id !== r.id)
        this.o.log.info(
          { revision: r.id, suspended_by: suspension.revision },
          'the Git sync is suspended: holding this revision until `keystonectl resume`',
        );
      this.heldRev = r;
      return;
    }
    this.o.queue.enqueue(r);
  }

  applyManual(
    r: Revision & { origin: 'manual'; planFile: string },
    opts: { force: boolean; now?: boolean },
  ): ManualApplyAccepted {
    const { store, log } = this.o;
    this.o.queue.forgetRetry();
    let suspendedSync = false;
    if (this.o.following === 'git') {
      if (!opts.force)
        throw Object.assign(
          new Error(
            'this agent follows Git: push a commit to deploy instead (a manual apply would be undone by the next commit); --force applies it anyway and suspends the Git sync until `keystonectl resume`',
          ),
          { code: 'KS_FOLLOWING_GIT' },
        );
      if (!store.syncSuspension()) {
        store.setSyncSuspension({ since: this.o.now(), revision: r.id, reason: 'a forced manual apply' });
        suspendedSync = true;
        log.warn({ revision: r.id }, 'the Git sync is suspended by a forced manual apply until `keystonectl resume`');
      }
    }
    log.info({ revision: r.id, plan: r.planFile, source: r.source }, 'manual apply requested');
    // Forced: the components' update locks are not waited for either (SPEC §19).
    // --now: nor the maintenance window (a lock still holds: SPEC §19).
    this.o.queue.enqueue({
      ...r,
      ...(opts.force && { overrideLocks: true }),
      ...((opts.force || opts.now) && { overrideWindow: true }),
    });
    return { revision: r.id, planFile: r.planFile, suspendedSync };
  }

  resume(): { resumed: boolean; revision?: string } {
    const { store, log } = this.o;
    const was = store.syncSuspension();
    if (!was) return { resumed: false };
    store.setSyncSuspension(undefined);
    const found = this.heldRev;
    this.heldRev = undefined;
    log.info({ suspended_by: was.revision, ...(found && { revision: found.id }) }, 'the Git sync resumed');
    if (found) {
      this.o.queue.enqueue(found);
      return { resumed: true, revision: found.id };
    }
    this.sync();
    return { resumed: true };
  }

  state(): SyncState {
    const suspended = this.o.store.syncSuspension();
    return {
      following: this.o.following,
      ...(suspended && { suspended }),
      ...(this.heldRev && { held: this.heldRev.id }),
    };
  }

  onSync(look: () => Promise<void>): void {
    this.look = look;
  }

  /** Looks now (a webhook, POST /v1/sync): false when no source can look on demand. Held commits are rechecked too. */
  sync(): boolean {
    this.o.queue.requestRecheck();
    if (!this.look) return false;
    // One look at a time; asks during a look make one more after it (it may have started before the change).
    if (this.looking) this.lookAgain = true;
    else this.looking = this.looks().finally(() => (this.looking = undefined));
    return true;
  }

  syncSettled(): Promise<{ lookFailed?: string }> | undefined {
    if (!this.sync()) return undefined;
    return (async () => {
      // `looking` covers the look asked for just now (a look already under way is followed by one more).
      while (this.looking) await this.looking;
      await this.o.queue.idle();
      return this.lookFailed === undefined ? {} : { lookFailed: this.lookFailed };
    })();
  }

  private async looks(): Promise<void> {
    do {
      this.lookAgain = false;
      try {
        await this.look?.();
        this.lookFailed = undefined;
      } catch (e) {
        this.lookFailed = (e as Error).message;
        this.o.log.error({ err: e as Error }, 'looking for a new revision failed');
      }
    } while (this.lookAgain);
    // Nothing newer found: someone asked (keystonectl sync, after freeing space), so the failed one goes again now.
    this.o.queue.retryNow();
  }
}
