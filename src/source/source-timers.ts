// The timers a source schedules its looks with: injected, so that a test can read the delay a look was scheduled
// with and fire it, instead of waiting for it.

export interface SourceTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const GLOBAL_TIMERS: SourceTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};
