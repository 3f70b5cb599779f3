// Update locks at an apply (SPEC §19): before a revision stops anything, the agent tries the lock of every component
// it would stop or restart. All free: it keeps them until each component is stopped (so none can grab its lock
// mid-stop, as balena does) and lets each go before anything starts (a program that takes its lock as it starts must
// not wait for the agent). One held: it lets go of the ones it took and the whole revision waits — what depends on a
// held component is not restarted either, because nothing of the revision is carried out.
import type { DesiredComponent } from '../core/desired-state.js';
import type { UpdateLockSpec } from '../core/recipe.js';
import { tryUpdateLock, type HeldUpdateLock } from '../runtime/update-lock.js';

/** A component whose update lock another process holds. */
export interface LockHolder {
  component: string;
  /** The lock file, relative to its work directory (as the recipe names it). */
  lock: string;
  workDir: string;
  /** `[lifecycle.update] lock_timeout` in ms: how long the revision may wait for this one; undefined waits for ever. */
  timeoutMs?: number;
}

/**
 * `free`: every lock is the agent's now — `taken` holds them all, `borrowed` names those a watcher kept (still its to
 * hand over or let go: update-lock-wait.ts), the rest were opened here. `held`: the ones opened here are let go again.
 */
export type LockCheck =
  | { kind: 'free'; taken: Map<string, HeldUpdateLock>; borrowed: ReadonlySet<string> }
  | { kind: 'held'; holders: LockHolder[] };

export interface LockCheckDeps {
  /** What runs now for a name (its lock is the one its program knows), or undefined. */
  running: (name: string) => DesiredComponent | undefined;
  workDir: (name: string) => string;
  /** Whether a component's lock is no longer waited for (given its lock_timeout: it passed). */
  ignore: (name: string, timeoutMs: number | undefined) => boolean;
  /** The lock file cannot be a lock (a link, a FIFO, not a regular file): said, and not waited for. */
  unusable: (name: string, why: string) => void;
  /**
   * What the new revision says of `name`'s lock: `undefined` when the component stays and its new recipe has no
   * lock (the operator dropped it: not waited for), its spec when it has one (the shorter lock_timeout counts), and
   * 'gone' when the revision removes the component (its running recipe's lock holds).
   */
  next: (name: string) => UpdateLockSpec | undefined | 'gone';
  /** A lock already held for `name` (a watcher got it just before this retake): counted as the agent's, not tried again, never let go here. */
  preheld?: (name: string) => HeldUpdateLock | undefined;
  /** The longest any lock is waited for, whatever its lock_timeout (a new agent's trial commit). */
  capMs?: number;
}

/** Tries every lock of `names` (the components the apply would stop); all or none are kept. */
export async function checkUpdateLocks(names: readonly string[], deps: LockCheckDeps): Promise<LockCheck> {
  const taken = new Map<string, HeldUpdateLock>();
  const borrowed = new Set<string>();
  const holders: LockHolder[] = [];
  for (const name of names) {
    const spec = deps.running(name)?.recipe.lifecycle.update;
    const next = deps.next(name);
    const own =
      next === 'gone' || next?.lock_timeout === undefined
        ? spec?.lock_timeout
        : spec?.lock_timeout === undefined
          ? next.lock_timeout
          : Math.min(spec.lock_timeout, next.lock_timeout);
    const timeoutMs = deps.capMs === undefined ? own : Math.min(own ?? deps.capMs, deps.capMs);
    // Not waited for: a lock a watcher kept for it stays with the watcher, which lets it go after the retake.
    if (spec === undefined || next === undefined || deps.ignore(name, timeoutMs)) continue;
    const kept = deps.preheld?.(name);
    if (kept) {
      taken.set(name, kept);
      borrowed.add(name);
      continue;
    }
    const workDir = deps.workDir(name);
    let lock;
    try {
      lock = await tryUpdateLock(workDir, spec.lock);
    } catch (e) {
      // Not a regular file in the work directory (a link, a FIFO): no lock anyone can hold; the component is updated.
      deps.unusable(name, (e as Error).message);
      continue;
    }
    if (lock === 'held')
      holders.push({ component: name, lock: spec.lock, workDir, ...(timeoutMs !== undefined && { timeoutMs }) });
    else if (lock) taken.set(name, lock);
  }
  if (holders.length === 0) return { kind: 'free', taken, borrowed };
  await Promise.all([...taken].filter(([n]) => !borrowed.has(n)).map(([, l]) => l.release()));
  return { kind: 'held', holders };
}

export async function releaseAll(taken: Map<string, HeldUpdateLock>): Promise<void> {
  const locks = [...taken.values()];
  taken.clear();
  await Promise.all(locks.map((l) => l.release()));
}

/** `held: api holds its update lock` (and others). */
export function describeHolders(holders: readonly LockHolder[]): string {
  const names = holders.map((h) => h.component);
  return `held: ${names.length === 1 ? `${names[0]} holds its update lock` : `${names.slice(0, -1).join(', ')} and ${names.at(-1)} hold their update locks`}`;
}
