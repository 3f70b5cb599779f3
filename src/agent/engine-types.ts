// What the engine (engine.ts) is built with, the revision it is told of, what its apply takes: types only, apart so the one writer of what
// runs holds its steps and its queue, and the files that only name a revision need not read it.
import type { Reconcile } from '../core/diff.js';
import type { Logger } from '../log/logger.js';
import type { WorkerDeps } from './component-worker.js';
import type { ApplyOptions } from './engine-locks.js';

export interface EngineDeps extends Omit<WorkerDeps, 'onRecovered' | 'log' | 'startSlot'> {
  log: Logger;
  /** How many installs and spawns run at once; the waits for health are not counted (component-worker.ts). */
  concurrency: number;
}

export interface RevisionInfo {
  id: string;
  source: string;
  planFile: string;
  /** The fleet.toml target the plan came from (SPEC §13). */
  target?: string;
  /** What the plan was chosen with (agent/device-identity.ts). */
  identity?: string;
  signedAt?: number;
  /** The keys whose signatures counted. */
  signers?: string[];
  /** The device's rollout wave for this commit (SPEC §14). */
  wave?: string;
  unsigned: boolean;
}

/** Told an apply's reconcile before anything is touched (outcomes.ts writes the apply's row there). */
export type ApplyBegin = (r: Reconcile) => void;

/** How an apply honours update locks (engine-locks.ts). */
export type LockOptions = NonNullable<ApplyOptions['locks']>;
