// When a device applies a revision (SPEC §19), as steps of the spine (take-revision.ts): its downloads first (a
// revision that does not fit is refused before anything stops), then its maintenance window, then its update locks.
// Each either lets the revision go on or ends it with a waiting (or refused) outcome, and sets up the wait.
import type { DesiredComponent } from '../core/desired-state.js';
import { diff } from '../core/diff.js';
import { windowState, type MaintenanceWindow } from '../core/maintenance-window.js';
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import type { StateStore } from '../store/state-store.js';
import type { ApplyOptions } from './engine-locks.js';
import type { Outcomes } from './outcomes.js';
import type { Prefetched } from './prefetch.js';
import type { Candidate } from './rollout-holds.js';
import type { UpdateLockWait } from './update-lock-wait.js';
import type { LockHolder } from './update-locks.js';
import type { WindowWait } from './window-wait.js';

/** What these steps need of the spine's (RevisionSteps extends it). */
export interface WaitSteps {
  store: StateStore;
  outcomes: Outcomes;
  log: Logger;
  now: () => number;
  /** Where a revision waits for update locks (SPEC §19); without it, locks are not looked at. */
  lockWait?: UpdateLockWait;
  /** The device's own maintenance window (`--window`); a fleet target's wins (SPEC §19). */
  window?: MaintenanceWindow;
  /** Where a revision waits for its window; without it, windows are not looked at. */
  windowWait?: WindowWait;
  /** Downloads ahead of the apply and the disk check (prefetch.ts); without it, nothing is fetched early. */
  prefetch?: (components: DesiredComponent[], o: { images: boolean; revision: string }) => Promise<Prefetched>;
}

/** The outcomes these steps end a revision with (a subset of revision-steps.ts's RevisionOutcome). */
export type WaitOutcome = { kind: 'rejected'; reason: string; passing: boolean } | { kind: 'waiting'; reason: string };

/** How this revision honours update locks (SPEC §19); undefined: it does not (no lock wait, or an operator's --force). */
export function lockOptions(rev: Revision, s: WaitSteps, capMs?: number): ApplyOptions['locks'] {
  const wait = s.lockWait;
  if (!wait || rev.overrideLocks) return undefined;
  // `capMs`: the longest any lock is waited for (a new agent's trial commit: within half its deadline, SPEC §17).
  return {
    ignore: (_n, timeoutMs) => wait.timedOut(rev.id, timeoutMs),
    preheld: (n) => wait.peekKept(n),
    claim: (n) => void wait.takeKept(n),
    ...(capMs !== undefined && { capMs }),
  };
}

/** The revision waits for these locks: watched, reported once (an agent rollback's target silently). */
export function waitForLocks(
  c: Pick<Candidate, 'rev' | 'target'> & { waveName?: string },
  holders: LockHolder[],
  s: WaitSteps,
): WaitOutcome {
  const { rev, target, waveName } = c;
  const hold = s.lockWait!.wait(rev, holders);
  s.windowWait?.forget(rev.id);
  if (rev.rollback !== true)
    s.outcomes.waiting({
      revision: rev.id,
      ...(target !== undefined && { target }),
      ...(waveName !== undefined && { wave: waveName }),
      reason: hold.reason,
    });
  else s.log.info({ revision: rev.id, reason: hold.reason }, 'the rollback waits for an update lock');
  return { kind: 'waiting', reason: hold.reason };
}

/** Whether `revision` is the one waiting for a lock or its window (taken up again now). */
export function waitedFor(s: WaitSteps, revision: string): boolean {
  return s.lockWait?.waitingFor() === revision || s.windowWait?.waitingFor() === revision;
}

/** Downloads ahead (refusing a revision that does not fit), then the window: a waiting outcome when it is closed. */
export async function downloadsAndWindow(
  c: Pick<Candidate, 'rev' | 'state' | 'planFile' | 'target' | 'began' | 'window'> & { waveName?: string },
  inProgress: boolean,
  s: WaitSteps,
): Promise<WaitOutcome | undefined> {
  const { rev, state, planFile, target, waveName, began } = c;
  const window = c.window ?? s.window;
  // A device that runs nothing yet has nothing to disturb: its first revision goes at once.
  const exempt =
    inProgress || rev.rollback === true || rev.overrideWindow === true || s.store.components().length === 0;
  const now = s.now();
  const closed = window && !exempt && s.windowWait ? windowState(window, now) : undefined;
  const changing = new Set(diff(state, s.store.actualState()).startOrder);
  if (s.prefetch && changing.size) {
    const got = await s.prefetch(
      state.components.filter((x) => changing.has(x.name)),
      { images: closed?.open === false, revision: rev.id },
    );
    if (!got.ok) {
      // Without its wave: a full disk is this device's, not the commit's, and must not count towards a halt.
      s.outcomes.rejected({
        revision: rev.id,
        planFile,
        ...(target !== undefined && { target }),
        reason: got.reason,
        began,
        silent: rev.rollback === true,
      });
      s.log.error({ revision: rev.id, reason: got.reason }, 'revision refused; still running the previous one');
      return { kind: 'rejected', reason: got.reason, passing: true };
    }
  }
  if (closed && !closed.open) {
    const hold = s.windowWait!.wait(rev, window!, closed.opensAt);
    s.lockWait?.forget(rev.id);
    s.outcomes.waiting(
      {
        revision: rev.id,
        ...(target !== undefined && { target }),
        ...(waveName !== undefined && { wave: waveName }),
        reason: hold.reason,
      },
      hold.stable,
    );
    return { kind: 'waiting', reason: hold.reason };
  }
  s.windowWait?.done(rev.id);
  s.windowWait?.forget(rev.id);
  return undefined;
}
