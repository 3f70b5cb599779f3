// Puts a built server on its listeners: TCP (the agent's --listen) and optionally a Unix socket (--socket), which
// serves the same routes but is authenticated by its file mode (0600: the agent's user only) instead of the token.
import { chmodSync, lstatSync, rmSync, statSync } from 'node:fs';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { connectionLimitsOf } from './build-server.js';
import { limitedHttpServer } from './connection-limits.js';
import type { ListenAddress } from './listen-address.js';
import { markSocketRequest } from './socket-request.js';

export interface ApiListeners {
  /** What listens: `http://127.0.0.1:8080`, `unix:/run/keystone.sock`. */
  addresses: string[];
  /** The TCP port actually bound (useful with port 0). */
  port?: number;
  /** Answers waiting calls (503), stops listening, removes the socket file. */
  close(): Promise<void>;
}

export interface ListenOptions {
  tcp?: ListenAddress;
  socketPath?: string;
}

export async function listenApi(server: FastifyInstance, opts: ListenOptions): Promise<ApiListeners> {
  const addresses: string[] = [];
  let port: number | undefined;
  if (opts.tcp) {
    await server.listen({ host: opts.tcp.host, port: opts.tcp.port });
    for (const a of server.addresses()) {
      if (typeof a === 'string') continue;
      addresses.push(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
      port = a.port;
    }
  }
  let socket: Server | undefined;
  const socketPath = opts.socketPath;
  if (socketPath !== undefined) {
    await server.ready();
    try {
      await removeStaleSocket(socketPath);
      // The TCP listeners' limits: a process of the agent's user could otherwise hold descriptors without bound.
      socket = limitedHttpServer(connectionLimitsOf(server), (req, res) => {
        markSocketRequest(req);
        server.routing(req, res);
      });
      await listenPrivately(socket, socketPath);
    } catch (e) {
      await server.close();
      throw e;
    }
    addresses.push(`unix:${socketPath}`);
  }

  return {
    addresses,
    ...(port !== undefined && { port }),
    async close() {
      const socketClosed = socket && new Promise<void>((resolve) => socket.close(() => resolve()));
      socket?.closeIdleConnections();
      // fastify's close runs preClose first: waiting calls on either listener answer, then TCP stops.
      await server.close();
      if (socket) {
        socket.closeAllConnections();
        await socketClosed;
        rmSync(socketPath!, { force: true });
      }
    },
  };
}

/**
 * Binds with umask 0177 so that the socket is 0600 from its first instant (connecting needs write permission on it),
 * then chmods and checks anyway: umask cannot be changed in a worker thread, and another thread may create files
 * while it is narrowed (it only ever narrows, so such a file is at worst more private than asked).
 */
async function listenPrivately(server: Server, path: string): Promise<void> {
  let oldMask: number | undefined;
  try {
    oldMask = process.umask(0o177);
  } catch {
    /* worker thread: rely on the chmod below */
  }
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    if (oldMask !== undefined) process.umask(oldMask);
  }
  chmodSync(path, 0o600);
  const mode = statSync(path).mode & 0o777;
  if (mode !== 0o600) throw new Error(`${path}: the socket's mode is ${mode.toString(8)}, not 600`);
}

/** A socket file left by an agent that died is removed; a live one (another agent) or any other file is an error. */
async function removeStaleSocket(path: string): Promise<void> {
  let st;
  try {
    st = lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (!st.isSocket()) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  const live = await new Promise<boolean>((resolve) => {
    const c = connect(path);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
  if (live) throw new Error(`another process is listening on ${path}`);
  rmSync(path, { force: true });
}
