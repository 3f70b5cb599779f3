// A crash restart's start, prepared during its delay (user database, work directory, log files, the fork of the
// privilege wrapper), so that when the delay ends only the program's exec remains. One per worker, at most.
import type { DesiredComponent } from '../core/desired-state.js';
import type { ComponentPaths, PreparedStart, Runtime } from '../runtime/runtime.js';
import { abortableSleep } from './health-watch.js';

/** How long before its delay ends a restart is prepared (at once for a shorter delay). */
export const PREPARE_LEAD_MS = 250;

export class PreparedRestart {
  /** The start prepared for the next restart: discarded when it will not be used. */
  private current?: Promise<PreparedStart | undefined>;

  /**
   * Prepares the next start so that it is ready when a delay of `delayMs` ends, when the runtime can; undefined
   * otherwise. `signal` ends with the worker's generation; discard() drops what a launch did not take.
   */
  ahead(
    delayMs: number,
    c: DesiredComponent,
    runtime: () => Runtime,
    paths: ComponentPaths,
    signal: AbortSignal,
  ): Promise<PreparedStart | undefined> | undefined {
    let rt: Runtime;
    try {
      rt = runtime();
    } catch {
      return undefined;
    }
    if (!rt.prepareStart) return undefined;
    const p = (async () => {
      if (delayMs > PREPARE_LEAD_MS) await abortableSleep(delayMs - PREPARE_LEAD_MS, signal);
      if (signal.aborted) return undefined;
      return rt.prepareStart!(c, paths);
    })();
    p.catch(() => {}); // a failure surfaces where the launch takes it, as a start failure
    // One restart at a time: one that was prepared and never taken goes.
    this.discard();
    this.current = p;
    return p;
  }

  /** The launch takes the prepared start: from now on it is the launch's to run or discard. */
  take(p: Promise<PreparedStart | undefined>): Promise<PreparedStart | undefined> {
    if (this.current === p) this.current = undefined;
    return p;
  }

  /** A start prepared for a restart that will not happen: its waiting process goes. */
  discard(): void {
    const p = this.current;
    this.current = undefined;
    void p?.then((x) => x?.discard()).catch(() => {});
  }
}
