// When a Git source looks next: the poll interval with jitter after a good look, exponential backoff after failures,
// the first look spread by the device's name, and a server's Retry-After honoured.
import { createHash } from 'node:crypto';
import { backoffMs } from '../core/backoff.js';
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
  return backoffMs(failures - 1, {
    baseMs: base,
    capMs: pollMs,
    maxDoublings: 52,
    jitter: { kind: 'scale', min: 0.8, spread: 0.2, random: r },
  });
}

/**
 * Where in the poll interval a device looks, from its name alone: a stable hash of the name onto [0, pollMs). A fleet
 * rebooted together (a power cut) then spreads its looks over the interval instead of hitting the server in step,
 * and each device keeps its place across restarts. The hash is salted so that it is independent of the rollout wave,
 * which also hashes the name (SPEC §14): otherwise the canaries would always be the first to look.
 */
export function pollOffsetMs(device: string, pollMs: number): number {
  const h = createHash('sha256').update(`keystone poll offset\0${device}`).digest();
  // 48 bits are exact in a double; the fraction is in [0, 1).
  return Math.floor((h.readUIntBE(0, 6) / 2 ** 48) * Math.max(0, pollMs));
}

export interface FirstLookOptions {
  /** The device's name (SPEC §13). */
  device: string;
  pollMs: number;
  /** Whether the device already runs a revision from this source (it has something to keep running). */
  running: boolean;
}

/**
 * Milliseconds from start to the first look (SPEC §13): the device's offset in the interval plus up to 10% jitter.
 *
 * A device that runs nothing yet looks at once: it has nothing to keep running while it waits, a fresh device in
 * development (or being provisioned) should deploy as soon as it starts, and a fleet does not come up empty all at
 * once; a fleet restarting after a power cut does come up together, and those devices run what they had, so they
 * wait for their offset.
 */
export function firstLookDelayMs(opts: FirstLookOptions, random: () => number): number {
  if (!opts.running) return 0;
  const r = Math.min(Math.max(random(), 0), 1);
  return pollOffsetMs(opts.device, opts.pollMs) + Math.round(Math.max(0, opts.pollMs) * 0.1 * r);
}

/**
 * A `Retry-After` header in milliseconds from `nowMs`: delta-seconds (`120`) or an HTTP date (`Wed, 21 Oct 2015
 * 07:28:00 GMT`), a date in the past being 0. Undefined when absent or unreadable (the ordinary backoff applies).
 */
export function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date names its weekday and zone; a bare number with a sign or a fraction is not valid delta-seconds.
  if (!/^[A-Za-z]{3},/.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The longest a server's Retry-After is ever honoured (see busyWaitMs). */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * The wait before the next look after a 429 or 503 that said `Retry-After`: what the server asked, capped at ten poll
 * intervals and at an hour, so a misconfigured header (`Retry-After: 86400`) cannot silence a device for a day.
 */
export function busyWaitMs(retryAfter: number, pollMs: number): number {
  return Math.min(Math.max(0, retryAfter), 10 * Math.max(0, pollMs), MAX_RETRY_AFTER_MS);
}
