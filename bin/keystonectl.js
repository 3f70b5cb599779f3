#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (npm run build).
import { main } from '../dist/cli/keystonectl.js';

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  env: process.env,
});
