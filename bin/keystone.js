#!/usr/bin/env node
// Thin launcher: the compiled agent lives in dist/ (npm run build).
import { main } from '../dist/cli/keystone.js';

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  env: process.env,
});
// The agent's timers are done; exit even if a watcher or socket still holds the loop open.
process.exit();
