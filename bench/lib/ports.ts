// Loopback ports: a stand-in's pid over HTTP, and whether ports are free before a run.
import net from 'node:net';
import { epochNow } from './stats.js';

/** GET / on 127.0.0.1:port: { pid, connectedAt } from a stand-in, or null (refused, reset, timeout). */
export function askPid(port: number, timeoutMs = 300): Promise<{ pid: number; connectedAt: number } | null> {
  return new Promise((resolve) => {
    let connectedAt: number | undefined;
    let body = '';
    let settled = false;
    const finish = (v: { pid: number; connectedAt: number } | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      connectedAt = epochNow();
      socket.write('GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n');
    });
    socket.on('data', (d) => (body += d));
    socket.once('end', () => {
      const m = /\r\n\r\n(\d+)\s*$/.exec(body);
      finish(m ? { pid: Number(m[1]), connectedAt: connectedAt! } : null);
    });
    socket.once('error', () => finish(null));
    const timer = setTimeout(() => finish(null), timeoutMs);
  });
}

/** True when nothing accepts connections on the port (a stale listener would skew every figure). */
export async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

export async function assertPortsFree(ports: Iterable<number>): Promise<void> {
  const busy: number[] = [];
  for (const p of ports) if (!(await portFree(p))) busy.push(p);
  if (busy.length)
    throw new Error(
      `ports already in use on 127.0.0.1: ${busy.slice(0, 10).join(', ')}${busy.length > 10 ? ' …' : ''} (pass another --port-base)`,
    );
}
