// Exponential backoff, one pure function for every retry schedule of the agent: the Git poll after failures, the
// status outbox, GitHub's untimed rate limits, crash restarts, a store that cannot record an exit, a revision retried.

/**
 * Spreads a delay so that a fleet that failed together does not retry together; `random` is a number in [0, 1)
 * (clamped to [0, 1]), injected so that schedules are reproducible in tests.
 * - `scale`: the delay × (min + spread · random): `{ min: 0.8, spread: 0.4 }` is ±20 %.
 * - `equal`: "equal jitter", half the delay fixed and half random: never immediate, never in lockstep.
 */
export type Jitter = { kind: 'scale'; min: number; spread: number; random: number } | { kind: 'equal'; random: number };

export interface BackoffOptions {
  /** The delay of attempt 0, in ms; each attempt after it doubles it. */
  baseMs: number;
  /** The most the delay grows to before jitter (ms); none: no cap. */
  capMs?: number;
  /** Doubling stops after this many attempts (keeps the arithmetic finite, or the schedule short). */
  maxDoublings?: number;
  /** Spread, then rounded to whole ms; without it the delay is exact (and not rounded). */
  jitter?: Jitter;
}

/**
 * The delay before retry number `attempt` (0-based; a negative one counts as 0): baseMs · 2^attempt, doubling at most
 * maxDoublings times, capped at capMs, then jittered and rounded. A `scale` jitter above 1 may pass the cap: a caller
 * that must never wait longer caps the result again.
 */
export function backoffMs(attempt: number, o: BackoffOptions): number {
  const cap = o.capMs ?? Infinity;
  const n = Math.min(Math.max(0, attempt), o.maxDoublings ?? Infinity);
  const raw = Math.min(cap, o.baseMs * 2 ** n);
  if (!o.jitter) return raw;
  const r = Math.min(Math.max(o.jitter.random, 0), 1);
  const spread = o.jitter.kind === 'equal' ? raw / 2 + (r * raw) / 2 : raw * (o.jitter.min + o.jitter.spread * r);
  return Math.round(spread);
}
