// keystonectl's requests to the agent over node:http (node:https for an https --agent), as fetch() made them: no
// redirect followed, a timeout that covers the body, the connection closed after each answer. Not fetch(): its first
// call loads Node's undici and compiles its WebAssembly HTTP parser, ~130 ms of every `keystonectl status` on a
// device's CPU (bench/footprint.bench.ts measures the cold start).
import type { IncomingMessage, RequestOptions } from 'node:http';

/** The statuses fetch() counts as redirects: with redirect "error" each is a network error, never followed. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface AgentResponse {
  status: number;
  statusText: string;
  ok: boolean;
  contentType: string;
  /** The body as text (UTF-8), read to its end. */
  text(): Promise<string>;
  /** The body's chunks as they arrive. */
  body: AsyncIterable<Buffer>;
}

/**
 * A network failure, as fetch() reports one: `cause` is the socket's error (its `code`, ECONNREFUSED …) or why the
 * answer was refused (an unexpected redirect).
 */
export class AgentNetworkError extends TypeError {
  constructor(cause: unknown) {
    super('fetch failed', { cause });
  }
}

/**
 * One request: a POST's `body` (JSON text) is sent with its length, none with content-length 0. Rejects with AgentNetworkError,
 * or with `signal`'s reason once it aborts, before the answer or while its body is read.
 */
export async function agentRequest(
  url: URL,
  o: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; signal: AbortSignal },
): Promise<AgentResponse> {
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const payload = o.body === undefined ? undefined : Buffer.from(o.body, 'utf8');
  const headers = o.method === 'POST' ? { ...o.headers, 'content-length': String(payload?.length ?? 0) } : o.headers;
  const options: RequestOptions = { method: o.method, headers, agent: false };
  return new Promise<AgentResponse>((resolve, reject) => {
    const aborted = () => o.signal.reason as Error;
    if (o.signal.aborted) return reject(aborted());
    const req = request(url, options);
    const onAbort = () => req.destroy(aborted());
    o.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (e) => {
      o.signal.removeEventListener('abort', onAbort);
      reject(o.signal.aborted ? aborted() : new AgentNetworkError(e));
    });
    req.on('response', (res: IncomingMessage) => {
      if (REDIRECTS.has(res.statusCode ?? 0)) {
        res.destroy();
        req.destroy();
        return reject(new AgentNetworkError(new Error('unexpected redirect')));
      }
      // The body's reader sees an abort too (the socket is destroyed with the reason, which the stream passes on).
      res.on('error', () => undefined);
      resolve(responseOf(res, o.signal));
    });
    req.end(payload);
  });
}

function responseOf(res: IncomingMessage, signal: AbortSignal): AgentResponse {
  const status = res.statusCode ?? 0;
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      for await (const c of res) yield c as Buffer;
    } catch (e) {
      throw signal.aborted ? (signal.reason as Error) : new AgentNetworkError(e);
    }
    if (signal.aborted) throw signal.reason as Error;
  }
  const body = chunks();
  return {
    status,
    statusText: res.statusMessage ?? '',
    ok: status >= 200 && status < 300,
    contentType: String(res.headers['content-type'] ?? ''),
    body,
    async text() {
      const parts: Buffer[] = [];
      for await (const c of body) parts.push(c);
      return Buffer.concat(parts).toString('utf8');
    },
  };
}
