// One protocol v2 `ls-refs` exchange over smart HTTP as a single request: `POST <url>/git-upload-pack` with
// `Git-Protocol: version=2`, no `GET info/refs` discovery before it. The discovery only tells the client which
// protocol the server speaks and what it can do; once that is known (a look before, or a server assumed to be a
// current Git), asking straight away halves what a poll costs the host. `git http-backend` serves such a POST on
// its own (test/git/git-ls-refs.test.ts shows it). A server that does not answer it in protocol v2 gets
// KS_GIT_SERVER_UNSUPPORTED, so that callers fall back to the discovery.
//
// GitServerBusyError lives here, re-exported by git-remote-cache.ts where it was first defined: the remote cache
// looks through lsRefsV2, and both raise it, without an import cycle between the two.
// The answer's parser and the ref-name check are in ls-refs-answer.ts.
import { OperationError } from '../core/errors.js';
import { exactRefAnswer } from './exact-ref-answer.js';
import { keptRefsAnswer } from './kept-refs-answer.js';
import { budgetedHttpClient, TransferBudget } from './git-http-client.js';
import { hasControlOrSpace, parseLsRefsAnswer, printable, unsupported, type RefEntry } from './ls-refs-answer.js';

export interface LsRefsV2Options {
  /** The repository, `https://host/fleet.git`, without credentials. */
  url: string;
  /** Only refs whose names start with one of these are listed (at least one; `refs/heads/main` also matches `main-old`). */
  prefixes: readonly string[];
  /** Added to the request: the Authorization header. */
  headers?: Record<string, string>;
  /** Caps on the answer and on the whole exchange; ignored when `budget` is given. */
  maxBytes?: number;
  timeoutMs?: number;
  /** Run under this budget (counted, bounded and timed with the caller's other requests) instead of a fresh one. */
  budget?: TransferBudget;
  /** The `agent=` capability sent; false sends none. */
  agent?: string | false;
  /** What the listing is for, in error messages: `looking up the branch`. Default `listing refs`. */
  what?: string;
  /**
   * Only this ref is wanted (a prefix names it whole): the answer is read only until its line, and nothing else is
   * kept (exact-ref-answer.ts), so no number of refs that merely share its prefix makes the listing pass its cap.
   */
  exact?: string;
  /**
   * Only refs this keeps are wanted: the others are dropped as the answer streams, never held (kept-refs-answer.ts),
   * and only the kept lines count against `maxKeptBytes`; the wire is bounded by `maxBytes` or the budget as ever.
   */
  keep?: (ref: string) => boolean;
  /** With `keep`: the most bytes of kept lines (default LS_REFS_DEFAULTS.maxBytes). */
  maxKeptBytes?: number;
}

export interface LsRefsV2Result {
  /** In the server's order (sorted by name), only refs under the prefixes. */
  refs: RefEntry[];
  /** The answer's HTTP `Date`, in ms since the epoch: the host's clock. Undefined when absent or not an HTTP date. */
  serverTime?: number;
  bytesSent: number;
  bytesReceived: number;
}

/**
 * The server asked to be left alone for a while (429 Too Many Requests, 503 Service Unavailable): KS_GIT_SERVER_BUSY,
 * with its Retry-After as sent (seconds or an HTTP date), which the source turns into the wait before its next look.
 */
export class GitServerBusyError extends OperationError {
  constructor(
    readonly status: number,
    readonly retryAfter: string | undefined,
    message: string,
  ) {
    super('KS_GIT_SERVER_BUSY', message);
  }
}

export const LS_REFS_DEFAULTS = { maxBytes: 8 * 1024 * 1024, timeoutMs: 30_000 };
/**
 * Git's upload-pack drops every prefix (and lists all refs) past 65,536 of them; well below that, a caller asking for
 * this many is listing a fleet's worth of refs one by one and should ask with a shorter prefix instead.
 */
export const MAX_REF_PREFIXES = 4096;

/** The errors of a request that never reached the host (or lost it): KS_GIT_UNREACHABLE, wherever they come from. */
export const NETWORK_ERRNOS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);

/** Lists the refs under `prefixes` with one POST. Throws OperationError with a KS_GIT_* code, never anything else. */
export async function lsRefsV2(opts: LsRefsV2Options): Promise<LsRefsV2Result> {
  const body = lsRefsRequest(opts.prefixes, opts.agent ?? 'keystone');
  const url = opts.url.replace(/\/+$/, '');
  const what = opts.what ?? 'listing refs';
  const own = opts.budget === undefined;
  const budget =
    opts.budget ??
    new TransferBudget(
      opts.maxBytes ?? LS_REFS_DEFAULTS.maxBytes,
      opts.timeoutMs ?? LS_REFS_DEFAULTS.timeoutMs,
      `listing refs of ${url}`,
    );
  const sent0 = budget.sent;
  const received0 = budget.received;
  const exchange = async (): Promise<LsRefsV2Result> => {
    const http = budgetedHttpClient(budget, opts.headers ?? {});
    let status: number;
    let headers: Record<string, string>;
    let answer: Uint8Array;
    try {
      const res = await http.request({
        url: `${url}/git-upload-pack`,
        method: 'POST',
        headers: {
          'content-type': 'application/x-git-upload-pack-request',
          accept: 'application/x-git-upload-pack-result',
          'git-protocol': 'version=2',
        },
        body: [body] as unknown as AsyncIterableIterator<Uint8Array>,
      });
      status = res.statusCode;
      headers = res.headers ?? {};
      const listing = status === 200 && contentType(headers) === 'application/x-git-upload-pack-result';
      // An error answer is read too (its body is small, and the budget bounds it): the connection then goes back to
      // the pool instead of hanging half-read.
      if (!res.body) answer = new Uint8Array();
      else answer = await collect(listing ? reduced(res.body, opts, url) : res.body);
    } catch (e) {
      throw budget.failure ?? transportError(e, url, what);
    }
    if (status !== 200)
      throw statusError(status, headers['retry-after'], { url, what, authorized: hasAuthorization(opts.headers) });
    const type = contentType(headers);
    if (type !== 'application/x-git-upload-pack-result')
      throw unsupported(
        url,
        `answered the ls-refs request with Content-Type "${printable(type)}", not a Git upload-pack result`,
      );
    const refs = parseLsRefsAnswer(answer, url).filter((r) => opts.prefixes.some((p) => r.ref.startsWith(p)));
    const serverTime = httpDate(headers['date']);
    return {
      refs,
      ...(serverTime !== undefined && { serverTime }),
      bytesSent: budget.sent - sent0,
      bytesReceived: budget.received - received0,
    };
  };
  if (own) return budget.run(exchange);
  try {
    return await Promise.race([exchange(), budget.failed]);
  } catch (e) {
    throw budget.failure ?? e;
  }
}

/** The answer as the whole-answer parser is given it: one ref's line, the kept lines, or all of it. */
function reduced(
  body: AsyncIterableIterator<Uint8Array>,
  opts: LsRefsV2Options,
  url: string,
): AsyncIterable<Uint8Array> {
  if (opts.exact !== undefined) return exactRefAnswer(body, opts.exact, url);
  if (opts.keep === undefined) return body;
  return keptRefsAnswer(body, {
    keep: opts.keep,
    maxKeptBytes: opts.maxKeptBytes ?? LS_REFS_DEFAULTS.maxBytes,
    url,
    what: `listing refs of ${url}`,
  });
}

/**
 * The request body: `command=ls-refs`, the agent, a delimiter, one `ref-prefix` per prefix, a flush. Throws KS_USAGE
 * for no prefix, too many, or one that is empty or holds a space or a control character (it would break the line).
 */
export function lsRefsRequest(prefixes: readonly string[], agent: string | false = false): Uint8Array {
  checkPrefixes(prefixes);
  const lines = ['command=ls-refs\n'];
  if (agent !== false) lines.push(`agent=${agent}\n`);
  const args = [...new Set(prefixes)].map((p) => `ref-prefix ${p}\n`);
  return Buffer.concat([...lines.map(pkt), Buffer.from('0001'), ...args.map(pkt), Buffer.from('0000')]);
}

/** Throws KS_USAGE unless `prefixes` is one to MAX_REF_PREFIXES usable ref-name prefixes. */
export function checkPrefixes(prefixes: readonly string[]): void {
  if (prefixes.length === 0)
    throw new OperationError('KS_USAGE', 'listing refs needs at least one prefix (none would list every ref)');
  if (prefixes.length > MAX_REF_PREFIXES)
    throw new OperationError('KS_USAGE', `${prefixes.length} ref prefixes; at most ${MAX_REF_PREFIXES} in one listing`);
  for (const p of prefixes)
    if (p === '' || hasControlOrSpace(p) || Buffer.byteLength(p) > 1024)
      throw new OperationError(
        'KS_USAGE',
        `"${printable(p)}" is not a ref prefix (empty, too long, or with a space or a control character)`,
      );
}

/**
 * An HTTP `Date` in ms since the epoch, or undefined. Only the IMF-fixdate every server must send
 * (`Sun, 06 Nov 1994 08:49:37 GMT`) is read: Date.parse would take almost anything (`Date: 1` is 2001).
 */
export function httpDate(value: string | undefined): number | undefined {
  if (
    typeof value !== 'string' ||
    !/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(
      value.trim(),
    )
  )
    return undefined;
  const t = Date.parse(value);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * The coded error for a non-200 answer of a Git host: 401/403 KS_GIT_AUTH_FAILED, 429/503 GitServerBusyError, 5xx
 * KS_GIT_HTTP_ERROR, anything else (another 4xx, a 203 sign-in page, a redirect not followed)
 * KS_GIT_SERVER_UNSUPPORTED: the request was not understood (an old server, a dumb one, a proxy in the way; a
 * missing repository is told apart by the discovery a caller falls back to).
 */
export function statusError(
  status: number,
  retryAfter: string | undefined,
  ctx: { url: string; what: string; authorized: boolean },
): OperationError {
  const { url, what } = ctx;
  if (status === 429 || status === 503)
    return new GitServerBusyError(
      status,
      retryAfter,
      `${url} answered HTTP ${status} (${status === 429 ? 'too many requests' : 'unavailable'}) while ${what}`,
    );
  if (status === 401 || status === 403)
    return new OperationError(
      'KS_GIT_AUTH_FAILED',
      ctx.authorized
        ? `${url} refused the token (HTTP ${status}): check that it is current and may read the repository`
        : `${url} needs credentials (HTTP ${status}): give a token`,
    );
  if (status >= 500) return new OperationError('KS_GIT_HTTP_ERROR', `${what} from ${url} failed: HTTP ${status}`);
  return unsupported(url, `answered HTTP ${status} to a protocol v2 request while ${what}`);
}

/** A request that never got an answer: KS_GIT_UNREACHABLE for the network's errors, KS_GIT_FETCH_FAILED otherwise. */
export function transportError(e: unknown, url: string, what: string): OperationError {
  if (e instanceof OperationError) return e;
  const err = e as Error & { code?: string; cause?: { code?: string } };
  const errno = err.code ?? err.cause?.code;
  if (errno && NETWORK_ERRNOS.has(errno))
    return new OperationError('KS_GIT_UNREACHABLE', `cannot reach ${url} (${errno})`);
  return new OperationError(
    'KS_GIT_FETCH_FAILED',
    `${what} from ${url} failed: ${printable(String(err?.message ?? e))}`,
  );
}

function contentType(headers: Record<string, string>): string {
  return (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

function hasAuthorization(headers: Record<string, string> | undefined): boolean {
  return Object.keys(headers ?? {}).some((k) => k.toLowerCase() === 'authorization');
}

function pkt(line: string): Buffer {
  const payload = Buffer.from(line, 'utf8');
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0')), payload]);
}

async function collect(source: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of source) chunks.push(chunk);
  return Buffer.concat(chunks);
}
