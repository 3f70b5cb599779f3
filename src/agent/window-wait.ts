// The revision that waits for its maintenance window (SPEC §19): at most one (the newest; a newer one replaces it).
// A timer hands it back to the agent's loop when the window opens. The timer runs on the monotonic clock and the
// window on the wall clock: so it never waits longer than RECHECK_MS at a time, and each time the loop judges the
// window again on the wall clock as it reads then (a clock stepped by NTP counts within that long).
import { describeOpening, describeWait, type MaintenanceWindow } from '../core/maintenance-window.js';
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import { RevisionWait } from './revision-wait.js';

/** The longest a timer waits before the window is judged again on the wall clock. */
export const RECHECK_MS = 10 * 60_000;

export interface WindowHold {
  revision: string;
  /** `held: outside the maintenance window (opens Tue 02:00 Europe/Berlin, in 3h12m)`, as of now. */
  reason: string;
  /** The same without the countdown: what is reported once. */
  stable: string;
  since: number;
  opensAt: number;
  window: MaintenanceWindow;
}

export interface WindowWaitOptions {
  now: () => number;
  log: Logger;
  retake: (rev: Revision) => void;
  recheckMs?: number;
}

export class WindowWait extends RevisionWait {
  private w?: { rev: Revision; since: number; opensAt: number; window: MaintenanceWindow; timer: NodeJS.Timeout };

  constructor(private readonly o: WindowWaitOptions) {
    super(o.now);
  }

  wait(rev: Revision, window: MaintenanceWindow, opensAt: number): WindowHold {
    const since = this.begin(rev.id);
    this.cancel();
    const delay = Math.max(0, Math.min(opensAt - this.o.now(), this.o.recheckMs ?? RECHECK_MS));
    const timer = setTimeout(() => {
      if (this.w?.rev !== rev) return;
      this.w = undefined;
      this.o.retake(rev);
    }, delay);
    timer.unref();
    this.w = { rev, since, opensAt, window, timer };
    return this.hold()!;
  }

  hold(): WindowHold | undefined {
    const w = this.w;
    if (!w) return undefined;
    const opens = describeOpening(w.window, w.opensAt);
    return {
      revision: w.rev.id,
      reason: `held: outside the maintenance window (opens ${opens}, in ${describeWait(w.opensAt - this.o.now())})`,
      stable: `held: outside the maintenance window (opens ${opens})`,
      since: w.since,
      opensAt: w.opensAt,
      window: w.window,
    };
  }

  /** The revision waiting, handed back now (an operator said go: `keystonectl sync --now`); its wait ends. */
  takeNow(): Revision | undefined {
    const rev = this.w?.rev;
    this.cancel();
    return rev;
  }

  cancel(): void {
    if (this.w) clearTimeout(this.w.timer);
    this.w = undefined;
  }
}
