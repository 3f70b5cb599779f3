#!/usr/bin/env node
// fake-proxy.mjs: stands in for the ACME reverse proxy, the sidecar member of the example's `gateway` composite:
// it forwards every request to an upstream whose port it is given (bound from the backend's export).
//
// Flags:
//   --listen N        HTTP port on 127.0.0.1 (default 18091)
//   --upstream URL    where requests go (default http://127.0.0.1:18090)
//   --header TEXT     value of the x-proxy header added to every answer (default "keystone")
// HTTP: GET /health -> 200 when GET <upstream>/health answers 200, else 503
//       anything else -> the upstream's answer (status, content-type, body), or 502 when it cannot be reached
// SIGTERM/SIGINT close the server and exit 0.
/* global process, console, fetch, AbortSignal, URL, Buffer */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const NAME = 'fake-proxy';
const log = (msg) => console.log(`${new Date().toISOString()} ${NAME} ${msg}`);

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      listen: { type: 'string', default: '18091' },
      upstream: { type: 'string', default: 'http://127.0.0.1:18090' },
      header: { type: 'string', default: 'keystone' },
    },
  }));
} catch (err) {
  console.error(`${NAME}: ${err.message}`);
  process.exit(2);
}
const port = Number(opts.listen);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`${NAME}: --listen must be a port number, got ${opts.listen}`);
  process.exit(2);
}
let upstream;
try {
  upstream = new URL(opts.upstream);
} catch {
  console.error(`${NAME}: --upstream must be a URL, got ${opts.upstream}`);
  process.exit(2);
}

const server = createServer(async (req, res) => {
  try {
    const r = await fetch(new URL(req.url ?? '/', upstream), { method: req.method, signal: AbortSignal.timeout(2000) });
    const body = Buffer.from(await r.arrayBuffer());
    if (req.url === '/health' && r.status !== 200) {
      res.writeHead(503, { 'content-type': 'text/plain', 'x-proxy': opts.header }).end('upstream unhealthy\n');
      return;
    }
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/octet-stream', 'x-proxy': opts.header }).end(body);
  } catch (err) {
    res.writeHead(req.url === '/health' ? 503 : 502, { 'content-type': 'text/plain', 'x-proxy': opts.header }).end(`upstream ${upstream.href} unreachable: ${err.message}\n`);
  }
});
server.listen(port, '127.0.0.1', () => log(`listening on 127.0.0.1:${port}, forwarding to ${upstream.href}`));
server.on('error', (err) => {
  console.error(`${NAME}: ${err.message}`);
  process.exit(1);
});
for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => {
    log(`${sig}: closing`);
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
