// The engine's update-lock step (SPEC §19; engine.ts, step 2): which of the components an apply would stop hold their
// update lock, as their running recipes name it. Apart from engine.ts so that file stays the apply's numbered steps;
// the engine still runs this in its queue, so a lock check never overlaps an apply.
import type { DesiredComponent, DesiredState } from '../core/desired-state.js';
import { diff } from '../core/diff.js';
import type { Logger } from '../log/logger.js';
import type { HeldUpdateLock } from '../runtime/update-lock.js';
import type { StateStore } from '../store/state-store.js';
import type { ComponentWorker } from './component-worker.js';
import { checkUpdateLocks, type LockHolder } from './update-locks.js';

/** An apply that did not begin: components it would stop hold their update locks (SPEC §19). Nothing was touched. */
export interface LocksHeld {
  holders: LockHolder[];
}

export interface ApplyOptions {
  /**
   * Honour update locks (a new revision); `ignore` says which locks are no longer waited for (lock_timeout);
   * `preheld` hands over a lock a watcher got just before (update-lock-wait.ts).
   */
  locks?: {
    ignore: (name: string, timeoutMs: number | undefined) => boolean;
    preheld?: (name: string) => HeldUpdateLock | undefined;
    /** Takes over a lock `preheld` lent once the apply goes ahead (it lets go of it after the component's stop). */
    claim?: (name: string) => void;
    /** The longest any lock is waited for, whatever its lock_timeout. */
    capMs?: number;
  };
}

/** What the lock step reads of the engine: its workers (what runs now), where components work, its log. */
export interface LockLookup {
  workers: ReadonlyMap<string, ComponentWorker>;
  workDir: (name: string) => string;
  log: Logger;
}

/** The update locks of what `desired` would stop (SPEC §19), as the running recipes name them (update-locks.ts). */
export function checkLocks(
  stopOrder: readonly string[],
  desired: DesiredState,
  previous: readonly DesiredComponent[],
  o: NonNullable<ApplyOptions['locks']>,
  revision: string,
  e: LockLookup,
) {
  const running = new Map(previous.map((c) => [c.name, c]));
  const next = new Map(desired.components.map((c) => [c.name, c]));
  return checkUpdateLocks(stopOrder, {
    running: (n) => e.workers.get(n)?.desired ?? running.get(n),
    next: (n) => (next.has(n) ? next.get(n)!.recipe.lifecycle.update : 'gone'),
    workDir: (n) => e.workDir(n),
    ignore: o.ignore,
    ...(o.preheld && { preheld: o.preheld }),
    ...(o.capMs !== undefined && { capMs: o.capMs }),
    unusable: (n, why) =>
      e.log.warn({ component: n, revision, code: 'KS_UPDATE_LOCK' }, `update lock not usable, not waited for: ${why}`),
  });
}

/**
 * Who holds an update lock that applying `revision` would wait for, tried and let go at once: nothing is touched
 * (Engine.lockHolders runs it in the engine's queue).
 */
export async function tryLocks(
  revision: DesiredState,
  store: StateStore,
  o: NonNullable<ApplyOptions['locks']>,
  revisionId: string,
  e: LockLookup,
): Promise<LockHolder[]> {
  const reconcile = diff(revision, store.actualState());
  if (!reconcile.stopOrder.length) return [];
  const check = await checkLocks(
    reconcile.stopOrder,
    revision,
    store.specs(),
    { ignore: o.ignore, ...(o.preheld && { preheld: o.preheld }), ...(o.capMs !== undefined && { capMs: o.capMs }) },
    revisionId,
    e,
  );
  if (check.kind === 'held') return check.holders;
  // Let go of what was tried here, not of a lock a watcher holds for the apply.
  await Promise.all([...check.taken].filter(([n]) => !check.borrowed.has(n)).map(([, l]) => l.release()));
  return [];
}
