#!/usr/bin/env node
// fake-reports.mjs: stands in for the ACME reports service, the backend member of the example's `gateway`
// composite (recipes/com.acme.gateway.toml): it answers on a port it is configured with and exports.
//
// Flags:
//   --port N              HTTP port on 127.0.0.1 (default 18090)
//   --version-label TEXT  the version it reports (default 0.0.0)
//   --title TEXT          the report title it serves (default "daily")
// HTTP: GET /       -> 200 {"service":"reports","version":…,"title":…,"port":…}
//       GET /health -> 200 ok
// SIGTERM/SIGINT close the server and exit 0.
/* global process, console */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const NAME = 'fake-reports';
const log = (msg) => console.log(`${new Date().toISOString()} ${NAME} ${msg}`);

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      port: { type: 'string', default: '18090' },
      'version-label': { type: 'string', default: '0.0.0' },
      title: { type: 'string', default: 'daily' },
    },
  }));
} catch (err) {
  console.error(`${NAME}: ${err.message}`);
  process.exit(2);
}
const port = Number(opts.port);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`${NAME}: --port must be a port number, got ${opts.port}`);
  process.exit(2);
}

const server = createServer((req, res) => {
  if (req.url === '/health') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    return;
  }
  const body = JSON.stringify({ service: 'reports', version: opts['version-label'], title: opts.title, port });
  res.writeHead(200, { 'content-type': 'application/json' }).end(body + '\n');
});
server.listen(port, '127.0.0.1', () => log(`listening on 127.0.0.1:${port}`));
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
