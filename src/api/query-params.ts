// Query strings parsed strictly: a misspelt `?dryrun=true` must be a 400, not a real restart.
import { formatDuration, parseDuration } from '../core/duration.js';
import { ApiError } from './api-error.js';

export type WaitFor = 'health' | 'started' | 'none';
export const WAIT_VALUES: readonly WaitFor[] = ['health', 'started', 'none'];

/** SPEC §10: a restart waits two minutes for health unless told otherwise. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** A wait longer than this is a mistake (and would hold a connection open for it). */
export const MAX_TIMEOUT_MS = 3_600_000;

/** The query as the router parsed it (api-router.ts): a value, or an array when the key repeats. */
export type RawQuery = Record<string, string | string[] | undefined>;

/** Refuses keys outside `allowed` and repeated keys; returns the single values. */
export function strictQuery(raw: unknown, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries((raw ?? {}) as RawQuery)) {
    if (!allowed.includes(key))
      throw new ApiError(
        400,
        'KS_BAD_QUERY',
        allowed.length
          ? `unknown query parameter "${key}" (this route takes ${allowed.join(', ')})`
          : `this route takes no query parameters, got "${key}"`,
      );
    if (Array.isArray(value))
      throw new ApiError(400, 'KS_BAD_QUERY', `query parameter "${key}" is given more than once`);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

export function parseBool(key: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new ApiError(400, 'KS_BAD_QUERY', `${key} must be true or false, not ${JSON.stringify(value)}`);
}

export function parseWait(value: string | undefined): WaitFor {
  if (value === undefined) return 'health';
  if ((WAIT_VALUES as readonly string[]).includes(value)) return value as WaitFor;
  throw new ApiError(
    400,
    'KS_BAD_QUERY',
    `wait must be one of ${WAIT_VALUES.join(', ')}, not ${JSON.stringify(value)}`,
  );
}

/** A Go-style duration, positive and at most an hour; returned with its canonical form (`120s` → `2m0s`). */
export function parseTimeout(value: string | undefined): { ms: number; text: string } {
  if (value === undefined) return { ms: DEFAULT_TIMEOUT_MS, text: formatDuration(DEFAULT_TIMEOUT_MS) };
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0 || ms > MAX_TIMEOUT_MS)
    throw new ApiError(
      400,
      'KS_BAD_QUERY',
      `timeout must be a duration such as 90s or 2m, above 0 and at most ${formatDuration(MAX_TIMEOUT_MS)}, not ${JSON.stringify(value)}`,
    );
  return { ms, text: formatDuration(ms) };
}

/** A whole number in [min, max]. */
export function parseIntParam(
  key: string,
  value: string | undefined,
  fallback: number | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return fallback;
  const n = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new ApiError(
      400,
      'KS_BAD_QUERY',
      `${key} must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`,
    );
  return n;
}
