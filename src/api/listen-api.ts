// Puts a built server on its listeners: TCP (the agent's --listen) and optionally a Unix socket (--socket), which
// serves the same routes but is authenticated by its file mode (0600: the agent's user only) instead of the token.
import { chmodSync, lstatSync, rmSync, statSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import type { Server } from 'node:http';
import { connect, isIP, type AddressInfo } from 'node:net';
import type { ApiServer } from './build-server.js';
import type { ListenAddress } from './listen-address.js';

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

export async function listenApi(server: ApiServer, opts: ListenOptions): Promise<ApiListeners> {
  const addresses: string[] = [];
  let port: number | undefined;
  try {
    if (opts.tcp) {
      // A name (`localhost`) is every address it resolves to, on one port: the first bound picks it when asked for 0.
      const hosts =
        isIP(opts.tcp.host) !== 0
          ? [opts.tcp.host]
          : (await lookup(opts.tcp.host, { all: true })).map((a) => a.address);
      for (const [i, host] of hosts.entries()) {
        const tcp = server.createListener(false);
        try {
          await listenOn(tcp, (l) => l.listen({ host, port: port ?? opts.tcp!.port }));
        } catch (e) {
          // The name's other addresses are extras (a machine without IPv6 still resolves localhost to ::1).
          if (i === 0) throw e;
          continue;
        }
        const a = tcp.address() as AddressInfo;
        addresses.push(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
        port = a.port;
      }
    }
    const socketPath = opts.socketPath;
    if (socketPath !== undefined) {
      await removeStaleSocket(socketPath);
      // The TCP listeners' limits: a process of the agent's user could otherwise hold descriptors without bound.
      await listenPrivately(server.createListener(true), socketPath);
      addresses.push(`unix:${socketPath}`);
    }
  } catch (e) {
    await server.close();
    throw e;
  }

  return {
    addresses,
    ...(port !== undefined && { port }),
    async close() {
      // Waiting calls on every listener answer first, then the listeners stop.
      await server.close();
      if (opts.socketPath !== undefined) rmSync(opts.socketPath, { force: true });
    },
  };
}

/** Listens as `start` says, resolving once bound and rejecting with the bind's error (EADDRINUSE …). */
function listenOn(listener: Server, start: (l: Server) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    start(listener);
    listener.once('listening', () => {
      listener.off('error', reject);
      resolve();
    });
  });
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
    await listenOn(server, (l) => l.listen(path));
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
