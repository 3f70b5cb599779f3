// One remote operation of the Git cache (git-remote-cache.ts) under a fresh budget of bytes and time, counted in the
// totals, with whatever fails turned into a coded, redacted OperationError. Apart from the cache, which decides what
// to fetch and where to keep it; this knows only how a request to the remote goes and how it fails.
import { OperationError } from '../core/errors.js';
import { oneRefAdvertisedHttp } from './fetch-advertisement.js';
import { headCompletingHttp } from './git-head-advertisement.js';
import { budgetedHttpClient, TransferBudget } from './git-http-client.js';
import { GitServerBusyError, NETWORK_ERRNOS } from './git-ls-refs.js';
import type { GitRemoteCacheOptions } from './git-remote-cache-options.js';

/** What every remote operation has moved so far (for the benchmark and the status page). */
export interface TransferTotals {
  requests: number;
  bytesSent: number;
  bytesReceived: number;
}

/** The failures of the transfer itself: the cache is not to blame for them. */
export const TRANSFER_CODES = new Set([
  'KS_GIT_SERVER_BUSY',
  'KS_GIT_TIMEOUT',
  'KS_GIT_FETCH_TOO_LARGE',
  'KS_GIT_PACK_TOO_LARGE',
  'KS_GIT_UNREACHABLE',
  'KS_GIT_AUTH_FAILED',
  'KS_GIT_HTTP_ERROR',
  'KS_GIT_REPO_NOT_FOUND',
]);

/**
 * Runs one remote operation under a fresh budget and turns whatever fails into a coded, redacted error. `headFor`:
 * a fetch of that ref, whose advertisement may need a HEAD (git-head-advertisement.ts). `maxBytes`: its cap, if
 * not the fetch's.
 */
export async function transfer<T>(
  opts: GitRemoteCacheOptions,
  totals: TransferTotals,
  what: string,
  op: (http: ReturnType<typeof budgetedHttpClient>, budget: TransferBudget) => Promise<T>,
  headFor?: string,
  maxBytes = opts.maxFetchBytes,
): Promise<T> {
  const budget = new TransferBudget(maxBytes, opts.fetchTimeoutMs, `${what} from ${opts.url}`);
  try {
    const http = budgetedHttpClient(budget, opts.headers);
    // A fetch of one ref reads its advertisement only as far as that ref (fetch-advertisement.ts), then completes it.
    return await budget.run(() =>
      op(headFor === undefined ? http : headCompletingHttp(oneRefAdvertisedHttp(http, headFor), headFor), budget),
    );
  } catch (e) {
    const err = e as Error & { code?: string; data?: { statusCode?: number } };
    if (budget.busy && err.code === 'HttpError' && err.data?.statusCode === budget.busy.status)
      throw new GitServerBusyError(
        budget.busy.status,
        budget.busy.retryAfter,
        `${opts.url} answered HTTP ${budget.busy.status} (${budget.busy.status === 429 ? 'too many requests' : 'unavailable'}) while ${what}`,
      );
    throw classify(opts, err, what);
  } finally {
    totals.requests += budget.requests;
    totals.bytesSent += budget.sent;
    totals.bytesReceived += budget.received;
  }
}

function classify(
  opts: GitRemoteCacheOptions,
  e: Error & { code?: string; data?: { statusCode?: number }; cause?: unknown },
  what: string,
): OperationError {
  const r = opts.redact;
  const url = opts.url;
  // lsRefsV2's errors come coded; a busy server's keeps its Retry-After.
  if (e instanceof GitServerBusyError) return new GitServerBusyError(e.status, e.retryAfter, r(e.message));
  if (e instanceof OperationError) return new OperationError(e.code, r(e.message));
  if (e.code === 'HttpError') {
    const status = e.data?.statusCode ?? 0;
    if (status === 401 || status === 403)
      return new OperationError(
        'KS_GIT_AUTH_FAILED',
        opts.headers.authorization
          ? `${url} refused the token (HTTP ${status}): check that it is current and may read the repository`
          : `${url} needs credentials (HTTP ${status}): give a token`,
      );
    if (status === 404)
      return new OperationError('KS_GIT_REPO_NOT_FOUND', `${url} answered HTTP 404: no such repository`);
    return new OperationError('KS_GIT_HTTP_ERROR', r(`${what} from ${url} failed: ${e.message}`));
  }
  const errno = e.code ?? (e.cause as { code?: string } | undefined)?.code;
  if (errno && NETWORK_ERRNOS.has(errno))
    return new OperationError('KS_GIT_UNREACHABLE', `cannot reach ${url} (${errno})`);
  if (e.code === 'RemoteCapabilityError')
    return new OperationError('KS_GIT_SERVER_UNSUPPORTED', r(`${url}: ${e.message}`));
  return new OperationError('KS_GIT_FETCH_FAILED', r(`${what} from ${url} failed: ${e.message}`));
}
