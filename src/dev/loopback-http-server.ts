// A loopback HTTP server that can go away and come back on the same port (a Git host or an API that is down for a
// while): the shape of the development servers (git-http-server.ts) and of the tests' contract servers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export abstract class LoopbackHttpServer {
  private server?: Server;

  /** `port` 0 takes a free port at the first start; later starts reuse it. */
  constructor(private listenPort = 0) {}

  protected abstract serve(req: IncomingMessage, res: ServerResponse): Promise<void>;

  /** Listens on 127.0.0.1 (the same port again after a stop). */
  async start(): Promise<void> {
    const server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.listenPort, '127.0.0.1', () => resolve());
    });
    this.listenPort = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and cuts open connections: clients see connection refused until start(). */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** The port listened on (after start). */
  get port(): number {
    return this.listenPort;
  }

  get running(): boolean {
    return this.server !== undefined;
  }
}
