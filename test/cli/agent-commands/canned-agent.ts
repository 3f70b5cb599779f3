// A tiny real HTTP server on loopback that answers like the agent's API with canned JSON and records every request
// (method, path, query, Authorization), for testing keystonectl's client without an agent. It refuses any request
// it was not told to expect, so a test sees a wrong path as a failure, not as a silent 404.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization?: string;
  host?: string;
}

export interface CannedAnswer {
  status?: number;
  body: unknown;
  /** ms before answering. */
  delayMs?: number;
}

export class CannedAgent {
  readonly requests: SeenRequest[] = [];
  private readonly routes = new Map<string, CannedAnswer>();
  private server?: Server;
  url = '';

  /** `key` is `METHOD /path` (the query is not part of it). */
  on(key: string, answer: CannedAnswer | unknown): this {
    this.routes.set(key, isAnswer(answer) ? answer : { body: answer });
    return this;
  }

  async listen(): Promise<this> {
    this.server = createServer((req, res) =>
      this.handle(req).then(({ status, body }) => {
        const text = typeof body === 'string' ? body : JSON.stringify(body);
        res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
        res.end(text);
      }),
    );
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    const u = new URL(req.url ?? '/', 'http://x');
    this.requests.push({
      method: req.method ?? '?',
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      ...(req.headers.authorization !== undefined && { authorization: req.headers.authorization }),
      ...(req.headers.host !== undefined && { host: req.headers.host }),
    });
    const answer = this.routes.get(`${req.method} ${decodeURIComponent(u.pathname)}`);
    if (!answer)
      return {
        status: 599,
        body: { error: { code: 'TEST_UNEXPECTED', message: `unexpected ${req.method} ${u.pathname}` } },
      };
    if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
    return { status: answer.status ?? 200, body: answer.body };
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

function isAnswer(v: unknown): v is CannedAnswer {
  return (
    typeof v === 'object' &&
    v !== null &&
    'body' in v &&
    Object.keys(v).every((k) => ['status', 'body', 'delayMs'].includes(k))
  );
}

/** The `{"error":{"code","message"}}` body of SPEC §10, with the API's extra fields beside `error` (a 504's states). */
export const apiError = (
  status: number,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
): CannedAnswer => ({
  status,
  body: { error: { code, message }, ...extra },
});
