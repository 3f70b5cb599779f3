// The Git source's errors: its options refused before it starts, and what a failed look says (redacted, with a
// 429/503's wait). Computed apart from GitSource (git-source.ts), which keeps the state (when the next look may be)
// and reports them.
import { isErrorCode } from '../core/error-catalogue.js';
import { OperationError } from '../core/errors.js';
import type { GitServerBusyError } from '../git/git-ls-refs.js';
import { busyWaitMs, retryAfterMs } from '../git/git-poll-delay.js';
import type { GitSourceOptions } from './git-source-options.js';

// A branch name git would accept, restricted to what is safe in a refspec and a label.
const BRANCH = /^(?!.*\.\.)(?!.*\/\/)(?!.*\.lock$)(?!.*\/$)[A-Za-z0-9_][A-Za-z0-9._/-]*$/;

/** Throws OperationError KS_USAGE for a token, a branch or a poll interval that cannot work (GitSource's checks). */
export function checkGitSourceOptions(opts: GitSourceOptions): void {
  const token = opts.token;
  if (
    token !== undefined &&
    (token === '' || [...token].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f))
  )
    throw new OperationError('KS_USAGE', 'the Git token is empty or contains whitespace or control characters');
  if (
    !BRANCH.test(opts.ref.replace(/^refs\/heads\//, '')) ||
    (opts.ref.startsWith('refs/') && !opts.ref.startsWith('refs/heads/'))
  )
    throw new OperationError('KS_USAGE', `"${opts.ref}" is not a branch name (a branch is followed, e.g. main)`);
  if (!(opts.pollMs > 0)) throw new OperationError('KS_USAGE', 'the poll interval must be positive');
}

/**
 * A 429/503: the next scheduled look waits what its Retry-After asks (capped, see busyWaitMs), said once in the
 * error of the look that got it. A webhook or `syncNow()` in the meantime still looks at once: someone asked.
 * `notBefore` is when the next scheduled look may be, none when the server asked for no wait that can be read.
 */
export function busyLookError(
  e: GitServerBusyError,
  now: number,
  pollMs: number,
  redact: (text: string) => string,
): { error: OperationError; notBefore?: number } {
  const asked = retryAfterMs(e.retryAfter, now);
  if (asked === undefined) return { error: new OperationError(e.code, redact(`${e.message}; retrying with backoff`)) };
  const wait = busyWaitMs(asked, pollMs);
  const notBefore = now + wait;
  const capped = wait < asked ? ` (it asked for ${Math.ceil(asked / 1000)} s; capped)` : '';
  // The header is the server's text: shown bounded and printable.
  const said = [...(e.retryAfter ?? '')]
    .filter((c) => c >= ' ' && c <= '~')
    .join('')
    .slice(0, 40);
  return {
    error: new OperationError(
      e.code,
      redact(`${e.message}; Retry-After ${said}: next look in ${Math.ceil(wait / 1000)} s${capped}`),
    ),
    notBefore,
  };
}

/** Any other failure of a look as a coded, redacted error; an uncoded one is KS_GIT_FAILED, named by the label. */
export function codedLookError(e: unknown, label: string, redact: (text: string) => string): Error & { code?: string } {
  const err = e as Error & { code?: string };
  if (err instanceof OperationError) return new OperationError(err.code, redact(err.message));
  return new OperationError(isErrorCode(err.code) ? err.code : 'KS_GIT_FAILED', redact(`${label}: ${err.message}`));
}

/** `text` with every one of `redactions` (the token, as sent) replaced by `***`. */
export function redacted(text: string, redactions: readonly string[]): string {
  let out = text;
  for (const s of redactions) out = out.split(s).join('***');
  return out;
}
