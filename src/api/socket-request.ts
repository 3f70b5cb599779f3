// Requests that came through the Unix socket: its file mode (0600) is their authentication, so they need no token.
import type { IncomingMessage } from 'node:http';

const viaSocket = new WeakSet<IncomingMessage>();

/** Called by the socket listener on every request before it is routed. */
export function markSocketRequest(req: IncomingMessage): void {
  viaSocket.add(req);
}

export function isSocketRequest(req: IncomingMessage): boolean {
  return viaSocket.has(req);
}
