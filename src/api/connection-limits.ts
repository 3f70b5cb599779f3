// How many connections the API holds and for how long (issue 13, finding 8): a local user could hold thousands of
// half-open connections for over a minute each, and every one is a file descriptor of the agent, which also needs
// descriptors to supervise its components. Applied to every listener the API has: its TCP servers (one per address
// a name resolves to) and the Unix socket.
import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import { httpDate } from '../core/iso-time.js';

export interface ConnectionLimits {
  /** Open connections per listener; further ones are closed as soon as they are accepted. */
  maxConnections: number;
  /** From the first byte of a request (or from the connection, for its first) to the end of its headers. */
  headersTimeoutMs: number;
  /**
   * Until the whole request (headers and body) has arrived. It never covers the answer: a restart that waits for
   * health, or the progress stream of POST /v1/apply, may take as long as the route allows.
   */
  requestTimeoutMs: number;
  /** A kept-alive connection with no request in flight is closed after this. */
  idleTimeoutMs: number;
}

/**
 * 256: the API answers an operator, keystonectl, a dashboard and a Prometheus scraper, a handful of connections at
 * a time; 256 leaves room for bursts and still keeps the agent well inside the 1024 descriptors a device's default
 * limit gives it. 10 s of headers: on loopback they arrive within milliseconds, and a client that takes longer is
 * holding the connection, not sending a request. 2 min for the body: POST /v1/apply may send up to 48 MiB, which can
 * be slow when the API listens publicly on a thin link. 60 s idle: long enough for keystonectl and scrapers to reuse
 * a connection, short enough that abandoned ones go.
 */
export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  maxConnections: 256,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
  idleTimeoutMs: 60_000,
});

/**
 * Node checks the header and request timeouts of all connections on a timer (30 s by default, which would let a
 * 10 s limit hold connections for 40 s); a quarter of the header timeout, at most a second, keeps them near their
 * limit for the cost of walking a list of at most maxConnections.
 */
function checkingIntervalMs(limits: ConnectionLimits): number {
  return Math.max(10, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4)));
}

/** An HTTP/1 server with the limits: each TCP listener and the Unix socket's. */
export function limitedHttpServer(limits: ConnectionLimits, handler: RequestListener): Server {
  const server = createServer(
    {
      // A request without Host reaches the guard, which refuses it in the API's error shape (not Node's bare 400).
      requireHostHeader: false,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(limits),
    },
    // Node's own Date header formats through Date, which loads the time zone for good (core/iso-time.ts says why not).
    (req, res) => {
      res.setHeader('date', httpDate(Date.now()));
      handler(req, res);
    },
  );
  server.keepAliveTimeout = limits.idleTimeoutMs;
  // No inactivity timeout on the socket itself: it would cut the long waits the routes make on purpose (the
  // timeouts above stop counting once a request has arrived).
  server.setTimeout(0);
  server.maxConnections = limits.maxConnections;
  server.on('clientError', answerClientError);
  // An Expect other than 100-continue: Node's own 417 would write its Date header through Date.
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('date', httpDate(Date.now()));
    res.writeHead(417).end();
  });
  return server;
}

/**
 * A request node's parser refused (malformed, headers too large, or overdue: the header and request timeouts above)
 * is answered in the API's error shape before the connection is closed, when nothing was written on it yet.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex & { bytesWritten?: number }): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const status = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const message =
    status === 408
      ? 'the request did not arrive in time'
      : status === 431
        ? 'the request headers are too large'
        : 'the request is not valid HTTP';
  const body = JSON.stringify({ error: { code: 'KS_BAD_REQUEST', message } });
  if (socket.writable && !socket.bytesWritten)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy(err);
}

/** The limits with the caller's overrides, each checked (a zero would mean "none" to node). */
export function connectionLimits(overrides: Partial<ConnectionLimits> = {}): ConnectionLimits {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...overrides };
  for (const [k, v] of Object.entries(limits))
    if (!Number.isInteger(v) || v < 1)
      throw new RangeError(`connection limit ${k} must be a whole number ≥ 1, not ${v}`);
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new RangeError('headersTimeoutMs may not exceed requestTimeoutMs');
  return limits;
}
