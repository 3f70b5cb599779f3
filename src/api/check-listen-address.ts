// Tries the API's TCP address before the agent adopts anything, so that an address in use stops the start early.
import { createServer } from 'node:net';
import type { ListenAddress } from './listen-address.js';

/**
 * Binds `tcp` and lets it go at once; rejects with the bind's error (EADDRINUSE, EACCES, EADDRNOTAVAIL). Port 0 takes
 * any free port and is not tried. Only a check: the real listener binds again later, and fails on its own if the
 * address was taken in between.
 */
export async function checkListenAddress(tcp: ListenAddress): Promise<void> {
  if (tcp.port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host: tcp.host, port: tcp.port, exclusive: true }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
