// A real loopback HTTP server (node:http, port 0) serving fixed routes, counting requests so tests can prove
// what the cache saved, and recording how many body bytes it managed to send.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Route = (req: IncomingMessage, res: ServerResponse, server: TestServer) => void;

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** Requests received, by path. */
  hits: Map<string, number>;
  /** Total requests received. */
  requests(): number;
  /** Resolves when the response to the next request on `path` has closed (finished or aborted), with bytes sent. */
  closed(path: string): Promise<{ sent: number; finished: boolean }>;
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1:0 with `routes` (exact paths); anything else is a 404. */
export async function startServer(routes: Record<string, Route>): Promise<TestServer> {
  const hits = new Map<string, number>();
  const waiters = new Map<string, (r: { sent: number; finished: boolean }) => void>();
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    let sent = 0;
    const write = res.write.bind(res) as (chunk: Buffer, cb?: () => void) => boolean;
    res.write = ((chunk: Buffer, ...rest: unknown[]) => {
      sent += chunk.length;
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof res.write;
    res.on('close', () => {
      const w = waiters.get(path);
      waiters.delete(path);
      w?.({ sent, finished: res.writableFinished });
    });
    const route = routes[path];
    if (route) route(req, res, api);
    else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const api: TestServer = {
    origin: `http://127.0.0.1:${port}`,
    hits,
    requests: () => [...hits.values()].reduce((a, b) => a + b, 0),
    closed: (path) => new Promise((resolve) => waiters.set(path, resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return api;
}

/** A route answering 200 with `body` and its Content-Length. */
export function serve(body: Buffer): Route {
  return (_req, res) => {
    res.setHeader('content-length', body.length);
    res.end(body);
  };
}

/**
 * A route that streams zero chunks, chunked (no Content-Length) or with the given header, until the client goes
 * away or `cap` bytes were sent; it waits for 'drain' rather than buffering, so `sent` is what left the process.
 */
export function endless(opts: { contentLength?: number; cap?: number } = {}): Route {
  return (_req, res) => {
    if (opts.contentLength !== undefined) res.setHeader('content-length', opts.contentLength);
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    let sent = 0;
    const cap = opts.cap ?? 256 * 1024 * 1024;
    const pump = (): void => {
      while (!res.destroyed && sent < cap) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  };
}
