// keystonectl's entry in the package's bundle: checked, then loaded, as bin/keystonectl.js runs it from dist/.
import process from 'node:process';
import { preflight } from './preflight.mjs';

preflight('keystonectl');
const { main } = await import('../../dist/cli/keystonectl.js');
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  env: process.env,
});
