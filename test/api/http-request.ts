// Raw HTTP for the tests that need what fetch and inject normalise away: a path sent byte for byte (`..`), any Host
// header, no Host at all, or the Unix socket.
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body, when it is JSON. */
  json: unknown;
}

export interface RawRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** TCP port on 127.0.0.1, or a Unix socket path. */
  port?: number;
  socketPath?: string;
}

export function rawRequest(r: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        method: r.method ?? 'GET',
        path: r.path,
        headers: r.headers ?? {},
        ...(r.socketPath !== undefined ? { socketPath: r.socketPath } : { host: '127.0.0.1', port: r.port }),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    if (r.body !== undefined) req.write(r.body);
    req.end();
  });
}

/** One request written by hand on a TCP connection (HTTP/1.0 without a Host header); returns the status line. */
export function handWritten(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(port, '127.0.0.1');
    let got = '';
    c.setEncoding('utf8');
    c.on('data', (d: string) => (got += d));
    c.on('end', () => resolve(got.split('\r\n', 1)[0]!));
    c.on('error', reject);
    c.write(text);
  });
}

/** A raw connection the test writes to at will: a half-open request, or a whole one, and what came back. */
export interface RawConnection {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** True once the server (or the test) closed it. */
  closed(): boolean;
  /** Resolves when it is closed, with everything the server sent. */
  ended: Promise<string>;
}

/** Connects (TCP on 127.0.0.1, or a Unix socket) and writes `text`, resolving once connected. */
export function openConnection(target: { port?: number; socketPath?: string }, text = ''): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = target.socketPath !== undefined ? connect(target.socketPath) : connect(target.port!, '127.0.0.1');
    let got = '';
    let isClosed = false;
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (got += d));
    // A reset is how a server may drop a connection it will not serve: the connection is closed all the same.
    socket.on('error', () => {});
    const ended = new Promise<string>((r) =>
      socket.once('close', () => {
        isClosed = true;
        r(got);
      }),
    );
    socket.once('connect', () => {
      socket.off('error', reject);
      if (text) socket.write(text);
      resolve({ socket, received: () => got, closed: () => isClosed, ended });
    });
    socket.once('error', reject);
  });
}
