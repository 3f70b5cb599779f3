#!/usr/bin/env node
// fake-web.mjs: stands in for the ACME web front end (com.acme.web, process variant) in the
// Keystone example stack: a tiny page in front of the API, healthy only while the API is.
//
// Flags:
//   --port N     HTTP port on 127.0.0.1 (default 18088)
//   --api URL    the API's base URL (default http://127.0.0.1:18087)
// HTTP: GET /       -> 200 a small HTML page showing the API's version (or that it is unavailable)
//       GET /health -> 200 when GET <api>/health answers 200, else 503
// SIGTERM/SIGINT close the server and exit 0.
/* global process, console, fetch, AbortSignal, URL */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const NAME = 'fake-web';
const log = (msg) => console.log(`${new Date().toISOString()} ${NAME} ${msg}`);

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      port: { type: 'string', default: '18088' },
      api: { type: 'string', default: 'http://127.0.0.1:18087' },
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

async function getApi(path) {
  try {
    const r = await fetch(new URL(path, opts.api), { signal: AbortSignal.timeout(1500) });
    return { status: r.status, body: await r.text() };
  } catch (err) {
    return { status: 0, body: '', error: err.cause?.code ?? err.name };
  }
}

// Logs only transitions of the API's health, so a probe every second does not flood the log.
let apiState = 'unknown';
async function apiHealthy() {
  const r = await getApi('/health');
  const state = r.status === 200 ? 'up' : `down (${r.error ?? `HTTP ${r.status}`})`;
  if (state !== apiState) log(`api ${opts.api} is ${state}`);
  apiState = state;
  return r.status === 200;
}

const escape = (s) => String(s).replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

const server = createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    const up = await apiHealthy();
    res.writeHead(up ? 200 : 503, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ status: up ? 'pass' : 'fail', api: apiState }));
  }
  if (req.method === 'GET' && req.url === '/') {
    let line = 'The API is unavailable.';
    try {
      const hello = JSON.parse((await getApi('/v1/hello')).body);
      line = `API ${hello.service} ${hello.version} answers; its database is ${hello.db}.`;
    } catch {
      // keep the "unavailable" line
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    return res.end(`<!doctype html>\n<html><head><title>ACME edge</title></head>\n<body><h1>ACME edge device</h1>\n<p id="api">${escape(line)}</p></body></html>\n`);
  }
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end('not found\n');
});
server.on('error', (err) => {
  log(`cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
});
server.listen(port, '127.0.0.1', () => log(`listening on http://127.0.0.1:${server.address().port} (api ${opts.api})`));

function shutdown(signal) {
  log(`${signal} received, shutting down`);
  if (!server.listening) process.exit(0);
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
