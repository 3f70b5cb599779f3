// `--listen HOST:PORT` (or `none`): where the API's TCP listener goes.
import { isIP } from 'node:net';
import { isLoopbackHostname } from './loopback.js';

export type ListenAddress = { host: string; port: number };

/** `127.0.0.1:8080`, `localhost:8080`, `[::1]:8080`, `0.0.0.0:8080`; `none` → undefined. Throws with a message for people. */
export function parseListenAddress(text: string): ListenAddress | undefined {
  if (text === 'none') return undefined;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535)
    throw new Error(`--listen takes HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080) or none, not "${text}"`);
  return { host: m[1] ?? m[2]!, port };
}

/** Whether only this machine can reach the address (any other needs --listen-public). */
export function isLoopbackAddress(a: ListenAddress): boolean {
  return isLoopbackHostname(a.host);
}

/** For log lines and messages: `[::1]:8080`. */
export function formatListenAddress(a: ListenAddress): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/**
 * Host names a publicly listening agent answers to besides loopback ones: IP literals (a rebinding attack needs a
 * name, so an address in Host is safe), the address it listens on, and the machine's own names.
 */
export function publicHostAllowance(
  listen: ListenAddress,
  machineNames: readonly string[],
): (hostname: string) => boolean {
  const names = new Set([listen.host, ...machineNames].map((n) => n.toLowerCase()));
  return (hostname) => {
    const h = hostname.toLowerCase();
    const bare = h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
    return isIP(bare) !== 0 || names.has(bare);
  };
}
