// When a Git source looks next: the poll interval with jitter after a good look, exponential backoff after failures.

export interface PollDelayOptions {
  /** The poll interval; also the cap of the backoff, so a device catches up within one poll of the server's return. */
  pollMs: number;
  /** First retry after a failure (doubled per further failure). */
  retryBaseMs?: number;
}

/**
 * Milliseconds until the next look, given how many looks in a row have failed and a random number in [0, 1).
 *
 * - No failure: pollMs ± 10%. The jitter spreads a fleet that booted together (or came back after an outage)
 *   so that it does not hit the Git server in lock-step.
 * - After n failures: retryBaseMs · 2^(n−1), capped at pollMs, then scaled by a factor in [0.8, 1.0]. The jitter
 *   only shortens, so a retry never waits longer than the poll interval, yet devices still spread out at the cap.
 */
export function pollDelayMs(failures: number, opts: PollDelayOptions, random: () => number): number {
  const pollMs = Math.max(0, opts.pollMs);
  const r = Math.min(Math.max(random(), 0), 1);
  if (failures <= 0) return Math.round(pollMs * (0.9 + 0.2 * r));
  const base = Math.max(1, opts.retryBaseMs ?? 1000);
  // 2^52 is already beyond any cap; clamping the exponent keeps the arithmetic finite.
  const raw = Math.min(pollMs, base * 2 ** Math.min(failures - 1, 52));
  return Math.round(raw * (0.8 + 0.2 * r));
}
