// The agent's entry in the package's bundle: checked, then loaded (a dynamic import, so that nothing of the program
// runs before preflight), as bin/keystone.js runs it from dist/.
import process from 'node:process';
import { preflight } from './preflight.mjs';

preflight('keystone');
const { main } = await import('../../dist/cli/keystone.js');
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  env: process.env,
});
process.exit();
