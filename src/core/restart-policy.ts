// Supervision decisions of SPEC §5 as pure functions of data: time and randomness are passed in.

export type RestartPolicy = 'always' | 'on-failure' | 'never';

export const FIRST_RESTART_MS = 100;
export const MAX_BACKOFF_MS = 60_000;
export const CRASH_LOOP_LIMIT = 10;
export const HEALTHY_SPELL_MS = 10 * 60_000;

/** What the supervisor remembers about a component between exits (persisted: counts survive an agent restart). */
export interface RestartBudget {
  /** Restarts since the last healthy spell (or since the revision that last changed it). */
  restarts: number;
  /** When it last became healthy, if it still is. */
  healthySince?: number;
}

export interface ExitStatus {
  code: number | null;
  signal: string | null;
}

export type RestartDecision =
  | { kind: 'restart'; delayMs: number; attempt: number }
  | { kind: 'crash-looping'; restarts: number }
  | { kind: 'stay-stopped'; why: string };

/** True when the exit counts as a failure for `on-failure` (Docker's rule: a non-zero code, or a signal). */
export function isFailure(exit: ExitStatus): boolean {
  return exit.signal !== null || (exit.code !== null && exit.code !== 0);
}

/**
 * The delay before restart number `attempt` (1-based): the first is immediate (about 100 ms), then
 * exponential with ±20 % jitter, capped at 60 s. `random` returns [0, 1).
 */
export function backoffDelay(attempt: number, random: () => number): number {
  if (attempt <= 1) return FIRST_RESTART_MS;
  const base = Math.min(MAX_BACKOFF_MS, FIRST_RESTART_MS * 2 ** (attempt - 1));
  return Math.min(MAX_BACKOFF_MS, Math.round(base * (0.8 + 0.4 * random())));
}

/** The budget after a healthy spell: ten healthy minutes give every restart back. */
export function refreshBudget(budget: RestartBudget, now: number): RestartBudget {
  if (budget.healthySince !== undefined && now - budget.healthySince >= HEALTHY_SPELL_MS) return { ...budget, restarts: 0 };
  return budget;
}

/** Decides what follows an exit the agent did not ask for. */
export function decideRestart(policy: RestartPolicy, exit: ExitStatus, budget: RestartBudget, now: number, random: () => number): RestartDecision {
  if (policy === 'never') return { kind: 'stay-stopped', why: 'restart_policy is "never"' };
  if (policy === 'on-failure' && !isFailure(exit)) return { kind: 'stay-stopped', why: 'exited 0 and restart_policy is "on-failure"' };
  const { restarts } = refreshBudget(budget, now);
  if (restarts >= CRASH_LOOP_LIMIT) return { kind: 'crash-looping', restarts };
  const attempt = restarts + 1;
  return { kind: 'restart', delayMs: backoffDelay(attempt, random), attempt };
}
