import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/**
 * Ports below the kernel's ephemeral range (ip_local_port_range), so no outgoing connection of the test, the agent
 * or a probe can be given one as its local port between our pick and the component's listen. A port the kernel
 * hands out for listen(0) comes from that very range, and one long-lived connection (a keep-alive to the Git server,
 * an event stream) that lands on it keeps the component from binding for as long as it lives: a chaos run once
 * watched fake-influxdb fail with EADDRINUSE 51 times in a row that way.
 */
function pickRange(): [number, number] {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // Not Linux: the IANA dynamic range starts at 49152; 32768 is below it as well.
  }
  const top = Math.min(low, 49152) - 1;
  return [Math.max(10_000, top - 12_000), top];
}

function tryListen(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(undefined));
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

/** Ports nobody listens on right now, outside the ephemeral range, distinct within one call. */
export async function freePorts(n: number): Promise<number[]> {
  const [from, to] = pickRange();
  const held: Server[] = [];
  const ports: number[] = [];
  for (let tries = 0; ports.length < n; tries++) {
    if (tries > 1000) throw new Error(`no ${n} free ports in ${from}-${to}`);
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if (ports.includes(port)) continue;
    const s = await tryListen(port);
    if (!s) continue;
    held.push(s);
    ports.push(port);
  }
  await Promise.all(held.map((s) => new Promise<void>((r) => s.close(() => r()))));
  return ports;
}
