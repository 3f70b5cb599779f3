// The HTTP client isomorphic-git talks through: every request of one operation shares a byte budget and a deadline,
// carries the credentials, and is counted. A Git host that sends too much or hangs costs a bounded amount.
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import { OperationError } from '../core/errors.js';
import { gitHttpAgent } from './git-http-agent.js';

/** One operation's limits and what it has used so far. */
export class TransferBudget {
  received = 0;
  sent = 0;
  requests = 0;
  /**
   * The last answer that asked the client to come back later (429, 503), with its `Retry-After` as sent. The library
   * turns it into an HttpError without the headers, so it is kept here for the caller to honour.
   */
  busy?: { status: number; retryAfter?: string };
  /** Set once the budget was exceeded or the deadline passed: the reason the operation failed, whatever the library says. */
  failure?: OperationError;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  /** Settles (rejects) when the budget fails: raced against the library, which may not surface an aborted stream. */
  readonly failed: Promise<never>;
  private rejectFailed!: (e: OperationError) => void;

  constructor(
    readonly maxBytes: number,
    timeoutMs: number,
    private readonly what: string,
  ) {
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => undefined);
    this.timer = setTimeout(
      () =>
        this.fail(
          new OperationError('KS_GIT_TIMEOUT', `${what} took longer than ${timeoutMs} ms; the transfer was abandoned`),
        ),
      timeoutMs,
    );
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  fail(e: OperationError): void {
    if (this.failure) return;
    this.failure = e;
    this.controller.abort(e);
    this.rejectFailed(e);
  }

  countReceived(n: number): void {
    this.received += n;
    if (this.received > this.maxBytes)
      this.fail(
        new OperationError(
          'KS_GIT_FETCH_TOO_LARGE',
          `${this.what} received more than ${this.maxBytes} bytes; the transfer was abandoned`,
        ),
      );
  }

  done(): void {
    clearTimeout(this.timer);
  }

  /** Runs `op` under this budget: its result, or the budget's own failure if that came first (or caused op's). */
  async run<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await Promise.race([op(), this.failed]);
    } catch (e) {
      throw this.failure ?? e;
    } finally {
      this.done();
    }
  }
}

/**
 * An isomorphic-git HttpClient bound to one budget. `headers` (the Authorization header) are added to every
 * request here rather than through onAuth: onAuth only runs after a 401, which would double every poll.
 */
export function budgetedHttpClient(budget: TransferBudget, headers: Record<string, string>): HttpClient {
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      if (budget.failure) throw budget.failure;
      budget.requests++;
      let body = req.body;
      if (Array.isArray(body)) budget.sent += (body as Uint8Array[]).reduce((n, b) => n + b.byteLength, 0);
      else if (body) body = countChunks(body, (n) => (budget.sent += n));
      const res = await nodeHttp.request({
        ...req,
        body,
        headers: { ...req.headers, ...headers },
        signal: budget.signal,
        agent: gitHttpAgent(req.url),
      });
      if (res.statusCode === 429 || res.statusCode === 503) {
        const retryAfter = res.headers?.['retry-after'];
        budget.busy = { status: res.statusCode, ...(typeof retryAfter === 'string' && { retryAfter }) };
      }
      if (res.body) res.body = limitChunks(res.body, budget);
      return res;
    },
  };
}

async function* countChunks(
  source: AsyncIterableIterator<Uint8Array>,
  add: (n: number) => void,
): AsyncIterableIterator<Uint8Array> {
  for await (const chunk of source) {
    add(chunk.byteLength);
    yield chunk;
  }
}

async function* limitChunks(
  source: AsyncIterableIterator<Uint8Array>,
  budget: TransferBudget,
): AsyncIterableIterator<Uint8Array> {
  for await (const chunk of source) {
    budget.countReceived(chunk.byteLength);
    // Stop reading at once: isomorphic-git gathers a whole pack in memory, so the cap is also a memory bound.
    if (budget.failure) throw budget.failure;
    yield chunk;
  }
}

// The fetch asks for thin packs (thin-pack-http.ts wraps this client): isomorphic-git cannot be left a thin pack on
// disk (a delta cycle across packs hung the agent at 100 % CPU: test/e2e/gitops.e2e.test.ts), so each is completed
// against the local store before the library stores it (thin-pack.ts). This client, beneath that one, counts the
// bytes that crossed the wire.
