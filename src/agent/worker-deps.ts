// What a component worker is given and what its starts return (component-worker.ts, instance-supervision.ts).
import type { DesiredComponent } from '../core/desired-state.js';
import type { ExitStatus, RestartLimits } from '../core/restart-policy.js';
import type { Logger } from '../log/logger.js';
import type { ProbeResult } from '../runtime/probe.js';
import type { ComponentPaths, Runtime } from '../runtime/runtime.js';
import type { StateStore } from '../store/state-store.js';

export interface WorkerDeps {
  store: StateStore;
  /** The runtime of a kind; a kind this device lacks throws KS_RUNTIME_UNAVAILABLE. */
  runtime: (kind: 'process' | 'container') => Runtime;
  paths: (name: string) => ComponentPaths;
  probe: (c: DesiredComponent, paths: ComponentPaths, timeoutMs: number, signal: AbortSignal) => Promise<ProbeResult>;
  log: Logger;
  now: () => number;
  random: () => number;
  graceMs: number;
  restartLimits: RestartLimits;
  /** A crash restart became healthy again: its hard dependents must follow (SPEC §4, at run time). */
  onRecovered: (name: string) => void;
  /**
   * Runs the CPU-bound part of an apply's start (an install, a spawn) under the device's concurrency limit
   * (engine.ts). The wait for health runs outside it: a slow database must not hold a slot that an independent
   * component could start in (most of a start is waiting, not CPU).
   */
  startSlot: <T>(work: () => Promise<T>) => Promise<T>;
}

export type StartOutcome = { ok: true } | { ok: false; reason: string };

export function isCleanExit(exit: ExitStatus): boolean {
  return exit.code === 0 && exit.signal === null;
}

export function describeExit(exit: ExitStatus): string {
  if (exit.code === null && exit.signal === null)
    return 'exited (status unknown: the agent adopted it and is not its parent)';
  return exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
}
