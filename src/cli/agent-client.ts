// The agent's HTTP API (SPEC §10) as keystonectl sees it: a small client (over node:http, agent-http.ts), the shared
// flags, and one place that turns the API's error bodies into the exit codes of SPEC §9.
import { CodedError, OperationError } from '../core/errors.js';
import { agentRequest, type AgentResponse } from './agent-http.js';
import { agentUrl, resolveToken, type AgentArgs, type TokenSource } from './agent-token.js';
import { CHECKOUT_STATE_DIR } from './checkout-state-dir.js';
import { progressOf, renderProgress } from './component-progress.js';
import { EXIT, type CliIo } from './io.js';

/** A read that takes longer than this means the agent is stuck, not slow. */
export const READ_TIMEOUT_MS = 10_000;

/** parseArgs options shared by every command that talks to the agent. */
export const AGENT_OPTIONS = {
  agent: { type: 'string' },
  token: { type: 'string' },
  'state-dir': { type: 'string' },
} as const;

export const AGENT_USAGE = '[--agent URL] [--token TOKEN] [--state-dir DIR]';

/** Nothing answered at the URL (refused, no route, timed out): exit code 1. */
export class AgentUnreachableError extends OperationError {}

/** The agent answered with an HTTP error and (usually) its `{"error":{"code","message"}}` body. */
export class AgentApiError extends CodedError<string, object> {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    /** The parsed body, when it was JSON. */
    readonly body: unknown,
  ) {
    super(code, message);
  }

  /** An answer that reached the error boundary no command expected (withAgentErrors judges the expected ones). */
  override get exitCode(): 1 {
    return 1;
  }
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  /** ms before the client gives up waiting; default READ_TIMEOUT_MS. */
  timeoutMs?: number;
}

export class AgentClient {
  private tokenSource?: TokenSource;

  constructor(
    readonly baseUrl: URL,
    /** Called at most once, on the first request. */
    private readonly token: () => TokenSource,
  ) {}

  get<T = unknown>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('GET', path, opts);
  }

  post<T = unknown>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('POST', path, opts);
  }

  /** The URL of `path` under the base (which may itself have a path prefix, behind a proxy). */
  url(path: string, query: Query = {}): URL {
    const u = new URL(this.baseUrl.pathname.replace(/\/+$/, '') + path, this.baseUrl);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  }

  /**
   * POSTs a JSON body and yields the NDJSON lines of the answer as they arrive (POST /v1/apply). An error answer
   * throws as request() does; the stream ending early (the agent went away) ends the iteration.
   */
  async *postStream(path: string, body: unknown, opts: RequestOptions = {}): AsyncGenerator<unknown> {
    const url = this.url(path, opts.query);
    const timeoutMs = opts.timeoutMs ?? READ_TIMEOUT_MS;
    const limit = deadline(timeoutMs);
    try {
      yield* this.streamLines(url, body, limit.signal, timeoutMs);
    } finally {
      limit.clear();
    }
  }

  private async *streamLines(url: URL, body: unknown, signal: AbortSignal, timeoutMs: number): AsyncGenerator<unknown> {
    let res: AgentResponse;
    try {
      res = await agentRequest(url, {
        method: 'POST',
        headers: this.headers(true),
        body: JSON.stringify(body),
        signal,
      });
    } catch (e) {
      throw this.unreachable(e, timeoutMs);
    }
    if (!res.ok) {
      let text: string;
      try {
        text = await res.text();
      } catch (e) {
        throw this.unreachable(e, timeoutMs);
      }
      this.answer('POST', url, res, text);
      return;
    }
    if (!res.contentType.includes('ndjson')) {
      yield this.answer('POST', url, res, await res.text());
      return;
    }
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for await (const chunk of res.body) {
        buffered += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const lineText = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (lineText) yield JSON.parse(lineText) as unknown;
        }
      }
    } catch (e) {
      if (e instanceof SyntaxError)
        throw new OperationError(
          'KS_AGENT_BAD_RESPONSE',
          `${this.baseUrl.origin} sent a progress line that is not JSON: is it a Keystone agent?`,
        );
      throw this.unreachable(e, timeoutMs);
    }
  }

  /** Every request carries the bearer token when there is one: every /v1 route needs it, reads too (SPEC §10). */
  private headers(jsonBody = false): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (jsonBody) headers['content-type'] = 'application/json';
    this.tokenSource ??= this.token();
    if (this.tokenSource.token) headers.authorization = `Bearer ${this.tokenSource.token}`;
    return headers;
  }

  private async request<T>(method: 'GET' | 'POST', path: string, opts: RequestOptions): Promise<T> {
    const url = this.url(path, opts.query);
    const headers = this.headers();
    const timeoutMs = opts.timeoutMs ?? READ_TIMEOUT_MS;
    const limit = deadline(timeoutMs);
    let res: AgentResponse;
    let text: string;
    try {
      res = await agentRequest(url, { method, headers, signal: limit.signal });
      text = await res.text();
    } catch (e) {
      throw this.unreachable(e, timeoutMs);
    } finally {
      limit.clear();
    }
    return this.answer<T>(method, url, res, text);
  }

  /** The parsed JSON of a successful answer; an error answer thrown as AgentApiError. */
  private answer<T>(method: 'GET' | 'POST', url: URL, res: AgentResponse, text: string): T {
    let body: unknown;
    let isJson = false;
    try {
      body = text === '' ? undefined : JSON.parse(text);
      isJson = text !== '';
    } catch {
      body = text;
    }
    if (res.ok) {
      if (!isJson && text !== '')
        throw new OperationError(
          'KS_AGENT_BAD_RESPONSE',
          `${this.baseUrl.origin} answered ${method} ${url.pathname} with something that is not JSON: is it a Keystone agent?`,
        );
      return body as T;
    }
    const err = (
      isJson && typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined
    ) as { code?: unknown; message?: unknown } | undefined;
    const code = typeof err?.code === 'string' ? err.code : `HTTP_${res.status}`;
    let message =
      typeof err?.message === 'string'
        ? err.message
        : `${method} ${url.pathname} failed: HTTP ${res.status} ${res.statusText}`.trim();
    if (res.status === 401 && !this.tokenSource?.token) {
      message += `; no token was sent: pass --token, set KEYSTONE_TOKEN, or run as a user who can read the token file (${this.tokenSource?.missing ?? 'none found'})`;
      if (this.tokenSource?.searched)
        message += `; an agent with another state directory: pass its --state-dir DIR (\`npm start\` keeps it in ${CHECKOUT_STATE_DIR}/ of its checkout, or in $KEYSTONE_STATE_DIR)`;
    } else if (res.status === 401 && this.tokenSource?.file) {
      // A token found is not always the token of the agent at --agent: two agents on one machine, say.
      message += `; the token sent was read from ${this.tokenSource.file}: is the agent at ${this.baseUrl.origin} the one with that state directory? (--state-dir DIR, --agent URL)`;
    }
    throw new AgentApiError(res.status, code, message, body);
  }

  private unreachable(e: unknown, timeoutMs: number): AgentUnreachableError {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    const where = this.baseUrl.origin;
    if (err.name === 'TimeoutError')
      return new AgentUnreachableError(
        'KS_AGENT_UNREACHABLE',
        `the agent at ${where} did not answer within ${Math.round(timeoutMs / 1000)}s`,
      );
    const why = err.cause?.code ?? err.cause?.message ?? err.message;
    return new AgentUnreachableError(
      'KS_AGENT_UNREACHABLE',
      `no agent answers at ${where} (${why}): is \`keystone agent\` running and listening there? (--agent URL)`,
    );
  }
}

/** The client for `--agent`, with the token resolved on the first request (a usage error never reads the token file). */
export function agentClient(args: AgentArgs, io: CliIo): AgentClient {
  return new AgentClient(agentUrl(args.agent), () => resolveToken(args, io));
}

/** `{"error":{…}}` of an API error, for `--json` output. */
export function errorBody(e: AgentApiError): unknown {
  return typeof e.body === 'object' && e.body !== null ? e.body : { error: { code: e.code, message: e.message } };
}

/**
 * Runs a command body and maps the agent's HTTP errors to exit codes: 400 and 404 are bad input (2: a bad
 * value, an unknown component), everything else a failed operation (1: a wait that timed out (504), a component
 * that failed (502), a refused token). With `--json` the error body goes to stdout; otherwise the message, and the
 * state of each component when the agent sent them.
 */
export async function withAgentErrors(
  command: string,
  io: CliIo,
  json: boolean,
  fn: () => Promise<number>,
): Promise<number> {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof AgentApiError)) throw e;
    if (json) io.stdout.write(JSON.stringify(errorBody(e), null, 2) + '\n');
    io.stderr.write(`keystonectl ${command}: ${e.message} [${e.code}]\n`);
    if (!json) io.stderr.write(renderProgress(progressOf(e.body)));
    return e.status === 400 || e.status === 404 ? EXIT.BAD_INPUT : EXIT.FAILED;
  }
}

/**
 * A timeout that holds for the whole request, body included. Not AbortSignal.timeout(): its signal can be collected
 * while a long answer's body is read (nodejs/node#55428, undici#4068), and `--timeout` then silently stops holding.
 * The timer here keeps the controller alive until clear() is called.
 */
function deadline(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** The names of a list in an answer (stopOrder, started …). */
export const names = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/** `pid 41002`, a short container id, or `-`. */
export const shownId = (v: unknown): string =>
  typeof v === 'number' ? `pid ${v}` : typeof v === 'string' ? v.slice(0, 12) : '-';
