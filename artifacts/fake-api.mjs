#!/usr/bin/env node
// fake-api.mjs: stands in for the ACME API server (com.acme.api) in the Keystone example stack.
// It is only healthy while its database answers, which is why its recipe is hard on influxdb.
//
// Flags:
//   --port N               HTTP port on 127.0.0.1 (default 18087)
//   --db URL               the database's base URL (default http://127.0.0.1:18086)
//   --version-label TEXT   version reported by /v1/hello (default "1.4.0")
// HTTP: GET /health   -> 200 when GET <db>/health answers 200, else 503
//       GET /v1/hello -> 200 {"message":"hello","service":"com.acme.api","version":…,"db":"up"|"down"}
// SIGTERM/SIGINT close the server and exit 0.
/* global process, console, fetch, AbortSignal, URL */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const NAME = 'fake-api';
const log = (msg) => console.log(`${new Date().toISOString()} ${NAME} ${msg}`);

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      port: { type: 'string', default: '18087' },
      db: { type: 'string', default: 'http://127.0.0.1:18086' },
      'version-label': { type: 'string', default: '1.4.0' },
    },
  }));
} catch (err) {
  console.error(`${NAME}: ${err.message}`);
  process.exit(2);
}
const port = Number(opts.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`${NAME}: --port must be 0-65535`);
  process.exit(2);
}
const dbHealth = new URL('/health', opts.db).href;

// Logs only transitions, so a health check every second does not flood the log.
let dbState = 'unknown';
async function probeDb() {
  let state;
  try {
    const res = await fetch(dbHealth, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    state = res.status === 200 ? 'up' : `down (HTTP ${res.status})`;
  } catch (err) {
    state = `down (${err.cause?.code ?? err.name})`;
  }
  if (state !== dbState) log(`database ${dbHealth} is ${state}`);
  dbState = state;
  return state === 'up';
}

const json = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const server = createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    const up = await probeDb();
    return json(res, up ? 200 : 503, { status: up ? 'pass' : 'fail', db: dbState });
  }
  if (req.method === 'GET' && req.url === '/v1/hello') {
    const up = await probeDb();
    return json(res, 200, { message: 'hello', service: 'com.acme.api', version: opts['version-label'], db: up ? 'up' : 'down' });
  }
  json(res, 404, { error: 'not found' });
});
server.on('error', (err) => {
  log(`cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
});
server.listen(port, '127.0.0.1', () =>
  log(`version ${opts['version-label']} listening on http://127.0.0.1:${server.address().port} (db ${opts.db})`),
);

function shutdown(signal) {
  log(`${signal} received, shutting down`);
  if (!server.listening) process.exit(0);
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
