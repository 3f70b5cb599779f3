#!/usr/bin/env node
// fake-telemetry.mjs: stands in for the ACME telemetry agent (com.acme.telemetry) in the Keystone
// example stack. It probes the database periodically and records each round in a status file;
// a database outage is reported in that file, not fatal (it reconnects on its own, which is
// why its recipe is only ordering on influxdb).
//
// Flags:
//   --db URL         the database's base URL (default http://127.0.0.1:18086)
//   --status FILE    status file, rewritten atomically each round (default "telemetry.status")
//   --interval MS    milliseconds between rounds (default 1000)
//   --check          health-check mode: exit 0 if FILE exists and was written in the last 10 s,
//                    else exit 1 with the reason on stderr (the recipe's cmd: health check)
// SIGTERM/SIGINT stop the loop and exit 0.
/* global process, console, fetch, AbortSignal, URL, setTimeout, clearTimeout */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const NAME = 'fake-telemetry';
const MAX_AGE_MS = 10_000;
const log = (msg) => console.log(`${new Date().toISOString()} ${NAME} ${msg}`);

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      db: { type: 'string', default: 'http://127.0.0.1:18086' },
      status: { type: 'string', default: 'telemetry.status' },
      interval: { type: 'string', default: '1000' },
      check: { type: 'boolean', default: false },
    },
  }));
} catch (err) {
  console.error(`${NAME}: ${err.message}`);
  process.exit(2);
}

if (opts.check) {
  let written;
  try {
    written = JSON.parse(readFileSync(opts.status, 'utf8')).writtenAt;
  } catch (err) {
    console.error(`${NAME}: unhealthy: cannot read status file ${opts.status}: ${err.code ?? err.message}`);
    process.exit(1);
  }
  const age = Date.now() - Date.parse(written);
  if (!(age >= -1000 && age <= MAX_AGE_MS)) {
    console.error(`${NAME}: unhealthy: status file ${opts.status} was written at ${written}, not in the last ${MAX_AGE_MS / 1000}s`);
    process.exit(1);
  }
  process.exit(0);
}

const interval = Number(opts.interval);
if (!(interval > 0)) {
  console.error(`${NAME}: --interval must be a positive number of milliseconds`);
  process.exit(2);
}
const dbHealth = new URL('/health', opts.db).href;

let rounds = 0;
let dbState = 'unknown';
let timer;
let stopping = false;

async function round() {
  let state;
  try {
    const res = await fetch(dbHealth, { signal: AbortSignal.timeout(Math.min(interval, 2000)) });
    await res.arrayBuffer();
    state = res.status === 200 ? 'up' : `down (HTTP ${res.status})`;
  } catch (err) {
    state = `down (${err.cause?.code ?? err.name})`;
  }
  if (stopping) return;
  if (state !== dbState) log(`database ${dbHealth} is ${state}`);
  dbState = state;
  rounds += 1;
  // Write then rename, so that --check never reads a half-written file.
  const status = { writtenAt: new Date().toISOString(), rounds, db: state.startsWith('up') ? 'up' : 'down', detail: state };
  writeFileSync(`${opts.status}.tmp`, `${JSON.stringify(status)}\n`);
  renameSync(`${opts.status}.tmp`, opts.status);
  if (rounds === 1) log(`first status written to ${opts.status}`);
  timer = setTimeout(round, interval);
}

log(`probing ${dbHealth} every ${interval}ms`);
round();

function shutdown(signal) {
  stopping = true;
  log(`${signal} received, shutting down after ${rounds} rounds`);
  clearTimeout(timer);
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
