// Real HTTP requests to an API server, in the shape fastify's inject() had (the tests kept their assertions when the
// API moved to node:http, issue 31): the server gets a listener of its own on 127.0.0.1 (a free port) the first time,
// which its close() ends. Nothing is simulated: the bytes go through node's HTTP parser and the connection limits.
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiServer } from '../../src/api/build-server.js';

export interface InjectOptions {
  method?: string;
  url: string;
  headers?: OutgoingHttpHeaders;
  /** A string or bytes as they are; anything else as JSON (with its content type unless one is given). */
  payload?: unknown;
  /** Sent as one Cookie header. */
  cookies?: Record<string, string>;
}

export interface InjectResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The same as body (fastify's name for it). */
  payload: string;
  rawPayload: Buffer;
  json<T = unknown>(): T;
}

const ports = new WeakMap<ApiServer, Promise<number>>();

function portOf(server: ApiServer): Promise<number> {
  let port = ports.get(server);
  if (!port) {
    const listener = server.createListener(false);
    port = new Promise<number>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen({ host: '127.0.0.1', port: 0 }, () => resolve((listener.address() as AddressInfo).port));
    });
    ports.set(server, port);
  }
  return port;
}

export async function inject(server: ApiServer, opts: InjectOptions | string): Promise<InjectResponse> {
  const o = typeof opts === 'string' ? { url: opts } : opts;
  const port = await portOf(server);
  const headers: OutgoingHttpHeaders = { ...o.headers };
  let body: Buffer | undefined;
  if (o.payload !== undefined) {
    if (typeof o.payload === 'string' || Buffer.isBuffer(o.payload)) body = Buffer.from(o.payload as string | Buffer);
    else {
      body = Buffer.from(JSON.stringify(o.payload));
      if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type'))
        headers['content-type'] = 'application/json';
    }
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-length'))
      headers['content-length'] = body.length;
  }
  if (o.cookies)
    headers.cookie = Object.entries(o.cookies)
      .map(([k, v]) => `${k}=${v}`)
      .join('; ');
  return new Promise<InjectResponse>((resolve, reject) => {
    // A connection per request: nothing is pooled between tests, and close() never waits for an idle socket.
    const req = httpRequest(
      { host: '127.0.0.1', port, method: o.method ?? 'GET', path: o.url, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const rawPayload = Buffer.concat(chunks);
          const text = rawPayload.toString('utf8');
          resolve({
            statusCode: res.statusCode!,
            headers: res.headers,
            body: text,
            payload: text,
            rawPayload,
            json: <T>() => JSON.parse(text) as T,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
