// Supervision decisions of SPEC §5 as pure functions of data: time and randomness are passed in.
import { backoffMs } from './backoff.js';

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

/** The numbers of SPEC §5; a device may tune them (tests shorten the backoff so a crash loop takes seconds). */
export interface RestartLimits {
  firstRestartMs: number;
  maxBackoffMs: number;
  crashLoopLimit: number;
  healthySpellMs: number;
}

export const DEFAULT_RESTART_LIMITS: RestartLimits = {
  firstRestartMs: FIRST_RESTART_MS,
  maxBackoffMs: MAX_BACKOFF_MS,
  crashLoopLimit: CRASH_LOOP_LIMIT,
  healthySpellMs: HEALTHY_SPELL_MS,
};

export type RestartDecision =
  | { kind: 'restart'; delayMs: number; attempt: number }
  | { kind: 'crash-looping'; restarts: number }
  | { kind: 'stay-stopped'; why: string };

/**
 * True when the exit counts as a failure for `on-failure` (Docker's rule: a non-zero code, or a
 * signal). Only a known 0 is clean: an unknown status (an adopted process) counts as a failure.
 */
export function isFailure(exit: ExitStatus): boolean {
  return !(exit.code === 0 && exit.signal === null);
}

/**
 * The delay before restart number `attempt` (1-based): the first is immediate (about 100 ms), then
 * exponential with ±20 % jitter, capped at 60 s. `random` returns [0, 1).
 */
export function backoffDelay(
  attempt: number,
  random: () => number,
  limits: RestartLimits = DEFAULT_RESTART_LIMITS,
): number {
  if (attempt <= 1) return limits.firstRestartMs;
  const jittered = backoffMs(attempt - 1, {
    baseMs: limits.firstRestartMs,
    capMs: limits.maxBackoffMs,
    jitter: { kind: 'scale', min: 0.8, spread: 0.4, random: random() },
  });
  return Math.min(limits.maxBackoffMs, jittered);
}

/** The budget after a healthy spell: ten healthy minutes give every restart back. */
export function refreshBudget(
  budget: RestartBudget,
  now: number,
  limits: RestartLimits = DEFAULT_RESTART_LIMITS,
): RestartBudget {
  if (budget.healthySince !== undefined && now - budget.healthySince >= limits.healthySpellMs)
    return { ...budget, restarts: 0 };
  return budget;
}

/** Decides what follows an exit the agent did not ask for. */
export function decideRestart(
  policy: RestartPolicy,
  exit: ExitStatus,
  budget: RestartBudget,
  now: number,
  random: () => number,
  limits: RestartLimits = DEFAULT_RESTART_LIMITS,
): RestartDecision {
  if (policy === 'never') return { kind: 'stay-stopped', why: 'restart_policy is "never"' };
  if (policy === 'on-failure' && !isFailure(exit))
    return { kind: 'stay-stopped', why: 'exited 0 and restart_policy is "on-failure"' };
  const { restarts } = refreshBudget(budget, now, limits);
  if (restarts >= limits.crashLoopLimit) return { kind: 'crash-looping', restarts };
  const attempt = restarts + 1;
  return { kind: 'restart', delayMs: backoffDelay(attempt, random, limits), attempt };
}
