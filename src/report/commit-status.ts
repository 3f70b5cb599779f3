// Commit status (SPEC §8): what the agent reports on each commit it takes up, the reporter contract, and the
// coded error a reporter throws. The outbox decides from `retryable` alone whether to try again, so every
// reporter must classify its failures here rather than leak library errors.
export * from '../core/commit-report.js';
import { CodedError } from '../core/errors.js';
import { COMMIT_STATES, MAX_DESCRIPTION, REPORT_FIELD_KEYS, type CommitStatus } from '../core/commit-report.js';
import { ROLLOUT_STATES } from '../core/rollout-gate.js';
import { isCommitId } from '../git/commit-id.js';

/** One destination for statuses (Git notes, the GitHub API …). */
export interface StatusReporter {
  /** Stable across restarts: the outbox keys its rows on it. */
  readonly name: string;
  /**
   * Resolves once the status is stored remotely, with a notice when the delivery did something an operator should
   * hear of (the outbox logs it as a warning); throws StatusDeliveryError otherwise.
   */
  deliver(s: CommitStatus): Promise<void | DeliveryNotice>;
}

/** Something a delivery that went through had to do: e.g. replace a device's notes ref the server held too large. */
export interface DeliveryNotice {
  code: StatusDeliveryCode;
  message: string;
}

export type StatusDeliveryCode =
  /** The server could not be reached or did not answer in time. Retryable. */
  | 'KS_STATUS_UNREACHABLE'
  /** The server answered 5xx, 429 or 408: it may accept the same request later. Retryable. */
  | 'KS_STATUS_SERVER_ERROR'
  /**
   * The server said "too many requests, come back later" (GitHub: 429, or 403 with Retry-After, a secondary rate
   * limit message or x-ratelimit-remaining 0). Retryable; `retryAfterMs` says when, and the outbox holds every status
   * for that reporter until then.
   */
  | 'KS_STATUS_RATE_LIMITED'
  /** Another writer moved the notes ref each time we tried to push. Retryable. */
  | 'KS_STATUS_CONFLICT'
  /** 401/403: the token is missing, wrong or lacks the permission; sending it again will not help. Permanent. */
  | 'KS_STATUS_AUTH'
  /** Any other 4xx (422 validation, 404 unknown repository or commit). Permanent. */
  | 'KS_STATUS_REJECTED'
  /** The status itself breaks the contract (not a 40-hex commit, unknown state). Permanent. */
  | 'KS_STATUS_INVALID'
  /** A local Git operation failed (the notes cache or a local repository). Retryable: disks and locks recover. */
  | 'KS_STATUS_GIT_FAILED'
  /**
   * The server's notes ref of this device holds more than a device reads back (bytes on the wire, inflated, objects).
   * As a DeliveryNotice: the device replaced it with its own notes. As an error: the server refused to have it
   * replaced. Retryable: someone may delete the ref (docs/fleet-reports.md).
   */
  | 'KS_STATUS_NOTES_TOO_LARGE';

const RETRYABLE: ReadonlySet<StatusDeliveryCode> = new Set([
  'KS_STATUS_UNREACHABLE',
  'KS_STATUS_SERVER_ERROR',
  'KS_STATUS_RATE_LIMITED',
  'KS_STATUS_CONFLICT',
  'KS_STATUS_GIT_FAILED',
  'KS_STATUS_NOTES_TOO_LARGE',
]);

export class StatusDeliveryError extends CodedError<
  StatusDeliveryCode,
  { httpStatus?: number; retryAfterMs?: number }
> {
  override readonly name = 'StatusDeliveryError';
  readonly retryable: boolean;
  constructor(
    code: StatusDeliveryCode,
    message: string,
    data: { httpStatus?: number; retryAfterMs?: number } = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, data, options);
    this.retryable = RETRYABLE.has(code);
  }
}

export function isStatusDeliveryError(e: unknown, code?: StatusDeliveryCode): e is StatusDeliveryError {
  return e instanceof StatusDeliveryError && (code === undefined || e.code === code);
}

/** The error for an HTTP answer that is not a success: the status code alone decides retryable or permanent. */
export function httpDeliveryError(
  what: string,
  status: number,
  detail: string,
  retryAfterMs?: number,
): StatusDeliveryError {
  const data = { httpStatus: status, ...(retryAfterMs !== undefined && { retryAfterMs }) };
  const msg = `${what}: HTTP ${status}${detail ? `: ${detail}` : ''}`;
  if (status >= 500 || status === 429 || status === 408)
    return new StatusDeliveryError('KS_STATUS_SERVER_ERROR', msg, data);
  if (status === 401 || status === 403) return new StatusDeliveryError('KS_STATUS_AUTH', msg, data);
  return new StatusDeliveryError('KS_STATUS_REJECTED', msg, data);
}

/** Throws KS_STATUS_INVALID unless the status can be sent anywhere as it is. */
export function checkStatus(s: CommitStatus): void {
  const bad = (why: string) => new StatusDeliveryError('KS_STATUS_INVALID', `commit status: ${why}`);
  if (!isCommitId(s.commit)) throw bad(`commit must be 40 lowercase hex, got ${JSON.stringify(s.commit)}`);
  if (!COMMIT_STATES.includes(s.state)) throw bad(`unknown state ${JSON.stringify(s.state)}`);
  if (!/^\S+$/.test(s.context)) throw bad(`context must be one word, got ${JSON.stringify(s.context)}`);
  if (/[\r\n]/.test(s.description) || [...s.description].length > MAX_DESCRIPTION)
    throw bad('description must be one line of at most 140 characters (use describe())');
  if (!Number.isSafeInteger(s.at) || s.at < 0) throw bad(`at must be ms since the epoch, got ${s.at}`);
  for (const [k, v] of Object.entries(s.fields ?? {}))
    if (!(REPORT_FIELD_KEYS as readonly string[]).includes(k) || !/^[^\s=]{1,100}$/.test(v))
      throw bad(
        `field ${JSON.stringify(k)}=${JSON.stringify(v)}: keys are ${REPORT_FIELD_KEYS.join(', ')}, values one word`,
      );
  if (s.rollout) {
    const { wave, state, keep } = s.rollout;
    if (!/^[a-z0-9][a-z0-9._-]{0,62}$/i.test(wave) || wave.includes('..'))
      throw bad(`rollout wave ${JSON.stringify(wave)} is not a wave name`);
    if (!ROLLOUT_STATES.includes(state)) throw bad(`unknown rollout state ${JSON.stringify(state)}`);
    if (keep.length > 16 || keep.some((c) => !isCommitId(c)))
      throw bad('rollout keep: at most 16 commit ids of 40 lowercase hex');
  }
}

/** `keystone/<device>` */
export function statusContext(device: string): string {
  return `keystone/${device}`;
}

/**
 * One line of at most `max` characters: whitespace runs (newlines included) become one space, and a longer
 * text is cut at the last word boundary that fits, ending with `…`, so it never stops mid-word when it can help
 * it. Counts code points, so an emoji is never split into a lone surrogate.
 */
export function describe(text: string, max = MAX_DESCRIPTION): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const chars = [...line];
  if (chars.length <= max) return line;
  const room = chars.slice(0, max - 1).join('');
  const space = room.lastIndexOf(' ');
  // A word longer than half the room (a path, a hash) is cut rather than dropping most of the text.
  const cut = space >= room.length / 2 ? room.slice(0, space) : room;
  return `${cut.replace(/[\s,;:.]+$/, '')}…`;
}

// ---- descriptions for the agent's four moments ----

export interface PlanSummary {
  stopOrder: readonly string[];
  startOrder: readonly string[];
  noTouch: readonly string[];
}

/** `pending`: the dry-run summary, e.g. `applying: start api, web; stop old; 2 unchanged`. */
export function describePending(p: PlanSummary): string {
  const parts: string[] = [];
  if (p.startOrder.length) parts.push(`start ${p.startOrder.join(', ')}`);
  if (p.stopOrder.length) parts.push(`stop ${p.stopOrder.join(', ')}`);
  if (p.noTouch.length) parts.push(`${p.noTouch.length} unchanged`);
  return describe(`applying: ${parts.length ? parts.join('; ') : 'nothing to change'}`);
}

export function describeSuccess(p: PlanSummary): string {
  const n = p.startOrder.length + p.noTouch.length;
  return describe(`applied: ${n} component${n === 1 ? '' : 's'} running`);
}

/** `failure`: which components failed and why, the first one first since the line may be cut. */
export function describeFailure(failed: readonly { name: string; reason: string }[]): string {
  if (!failed.length) return describe('apply failed');
  return describe(`failed: ${failed.map((f) => `${f.name} (${f.reason})`).join('; ')}`);
}

/** `error`: the revision was rejected (invalid, unsigned, replayed); nothing was changed. */
export function describeRejected(reason: string): string {
  return describe(`rejected: ${reason}`);
}
