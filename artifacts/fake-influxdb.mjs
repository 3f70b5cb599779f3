#!/usr/bin/env node
// fake-influxdb.mjs: stands in for InfluxDB 2.7 (com.acme.influxdb) in the Keystone example stack.
// It starts slowly, like a database replaying its write-ahead log, and keeps a small
// record in its data directory so that data/ surviving an upgrade can be observed.
//
// Flags:
//   --port N            HTTP port on 127.0.0.1 (default 18086)
//   --start-delay MS    listen only after this many milliseconds (default 1500)
//   --data DIR          data directory, created if missing (default "data");
//                       DIR/influxd.json counts the boots seen by this directory
// HTTP: GET /health -> 200 {"status":"pass"}
// SIGTERM/SIGINT close the server and exit 0.
/* global process, console, setTimeout, clearTimeout */
import { createServer } from 'node:http';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const NAME = 'fake-influxdb';
const log = (msg) => console.log(`${new Date().toISOString()} ${NAME} ${msg}`);

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      port: { type: 'string', default: '18086' },
      'start-delay': { type: 'string', default: '1500' },
      data: { type: 'string', default: 'data' },
    },
  }));
} catch (err) {
  console.error(`${NAME}: ${err.message}`);
  process.exit(2);
}
const port = Number(opts.port);
const startDelay = Number(opts['start-delay']);
if (!Number.isInteger(port) || port < 0 || port > 65535 || !(startDelay >= 0)) {
  console.error(`${NAME}: --port must be 0-65535 and --start-delay a number of milliseconds`);
  process.exit(2);
}

// The data record: what a real database would keep in data/ across versions.
mkdirSync(opts.data, { recursive: true });
const recordFile = join(opts.data, 'influxd.json');
let record = { boots: 0, firstStart: new Date().toISOString() };
try {
  record = { ...record, ...JSON.parse(readFileSync(recordFile, 'utf8')) };
} catch {
  // first boot on this data directory (or an unreadable record: start over)
}
record.boots += 1;
record.lastStart = new Date().toISOString();
writeFileSync(`${recordFile}.tmp`, `${JSON.stringify(record)}\n`);
renameSync(`${recordFile}.tmp`, recordFile);
log(`data dir ${opts.data}: boot ${record.boots} (first started ${record.firstStart})`);

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"pass"}');
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end('{"error":"not found"}');
});
server.on('error', (err) => {
  log(`cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
});

log(`replaying write-ahead log for ${startDelay}ms before listening`);
const startTimer = setTimeout(() => {
  server.listen(port, '127.0.0.1', () => log(`listening on http://127.0.0.1:${server.address().port}`));
}, startDelay);

function shutdown(signal) {
  log(`${signal} received, shutting down`);
  clearTimeout(startTimer);
  if (!server.listening) process.exit(0);
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
