// The answer a handler builds: status, headers and a body that is JSON, text, bytes or a stream, sent once. Plain
// node:http underneath (issue 31: fastify cost the agent memory for what these few lines do); the shape follows the
// one the routes were written against (code, header, type, send, hijack).
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

export class ApiReply {
  statusCode = 200;
  private readonly headers = new Map<string, string | string[]>();
  /** Set once send() has run (or the handler took the response over): the server sends nothing more. */
  sent = false;

  constructor(readonly raw: ServerResponse) {}

  code(status: number): this {
    this.statusCode = status;
    return this;
  }

  header(name: string, value: string | string[]): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }

  getHeader(name: string): string | string[] | undefined {
    return this.headers.get(name.toLowerCase());
  }

  type(contentType: string): this {
    return this.header('content-type', contentType);
  }

  /** The handler writes the response itself from now on (Server-Sent Events): nothing is sent on its behalf. */
  hijack(): void {
    this.sent = true;
  }

  /**
   * Sends `payload`: undefined as no body, a string as text, bytes as bytes, a stream piped, anything else as JSON;
   * each with the content type it implies unless one was set.
   */
  send(payload?: unknown): this {
    if (this.sent) return this;
    this.sent = true;
    const res = this.raw;
    let body: string | Buffer | undefined;
    if (payload instanceof Readable) {
      this.defaultType('application/octet-stream');
    } else if (typeof payload === 'string') {
      this.defaultType('text/plain; charset=utf-8');
      body = payload;
    } else if (Buffer.isBuffer(payload)) {
      this.defaultType('application/octet-stream');
      body = payload;
    } else if (payload !== undefined) {
      this.defaultType('application/json; charset=utf-8');
      body = JSON.stringify(payload);
    }
    // Answers describe this device at one moment: never cached (the dashboard's hashed files say otherwise
    // themselves), never sniffed as something else.
    this.defaultHeader('cache-control', 'no-store');
    this.header('x-content-type-options', 'nosniff');
    // 204 and 304 have no body by definition; node would refuse to write one.
    const bodiless = this.statusCode === 204 || this.statusCode === 304;
    if (bodiless) this.headers.delete('content-length');
    else if (!(payload instanceof Readable))
      this.header('content-length', String(body === undefined ? 0 : Buffer.byteLength(body)));
    for (const [k, v] of this.headers) res.setHeader(k, v);
    res.statusCode = this.statusCode;
    if (payload instanceof Readable) {
      payload.pipe(res);
      // The client gone: the stream stops too (its producer unsubscribes on the response's close).
      res.once('close', () => payload.destroy());
    } else res.end(bodiless ? undefined : body);
    return this;
  }

  private defaultType(type: string): void {
    this.defaultHeader('content-type', type);
  }

  private defaultHeader(name: string, value: string): void {
    if (!this.headers.has(name)) this.headers.set(name, value);
  }
}
