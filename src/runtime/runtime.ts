// The interface every runtime (processes now, containers later) offers the executor and supervisor.
import type { DesiredComponent } from '../core/desired-state.js';

/** How to find a running instance again, persisted in the state store: never a bare pid. */
export type InstanceRef = { kind: 'process'; pid: number; startTime: string } | { kind: 'container'; id: string };

export interface ExitStatus {
  code: number | null;
  signal: string | null;
}

export interface Instance {
  ref: InstanceRef;
  /** Resolves when the instance exits, for instances this agent started or can watch. */
  exited: Promise<ExitStatus>;
}

/** A start prepared ahead (Runtime.prepareStart): `go()` runs the program, `discard()` removes it unrun. */
export interface PreparedStart {
  readonly instance: Instance;
  go(): Instance;
  discard(): Promise<void>;
}

/** Where a component lives on the device. */
export interface ComponentPaths {
  /** The work directory: owned by the run user, survives upgrades (data/ lives here). */
  workDir: string;
  /** stdout.log and stderr.log, rotated by size. */
  logDir: string;
}

export interface Runtime {
  readonly kind: 'process' | 'container';
  /** Artifacts into the work directory and the install script; throws with a stable code on failure. */
  install(c: DesiredComponent, paths: ComponentPaths, signal: AbortSignal): Promise<void>;
  start(c: DesiredComponent, paths: ComponentPaths): Promise<Instance>;
  /**
   * `start` done ahead of time, for a restart's delay to hide it: the instance exists (pid recorded, exit watched)
   * but its program runs only once `go()` is called. Runtimes without it start at the delay's end.
   */
  prepareStart?(c: DesiredComponent, paths: ComponentPaths): Promise<PreparedStart>;
  /** SIGTERM (or the engine's stop), then SIGKILL after `graceMs`; resolves once it is gone. */
  stop(ref: InstanceRef, graceMs: number): Promise<void>;
  /** Re-attaches to an instance recorded before an agent restart, if it is still the same one. */
  adopt(ref: InstanceRef): Promise<Instance | undefined>;
  /**
   * Instances this agent owns that the engine still holds (containers: by label), so that the agent can remove the
   * ones no record accounts for. Runtimes whose instances vanish by themselves (processes) leave it out.
   */
  listOwned?(): Promise<Array<{ id: string; component: string }>>;
  removeOwned?(id: string): Promise<void>;
}
