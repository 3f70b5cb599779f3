// setpriv (util-linux) is what every component command is started through: it drops to the run user, sets
// no_new_privs and the capabilities (runtime/privileges.ts). Without it no component starts at all.
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { promisify } from 'node:util';
import { fail, pass, type CheckResult } from './check-result.js';

const run = promisify(execFile);

const FIX =
  'install util-linux (Debian/Ubuntu: apt-get install util-linux; Alpine: apk add setpriv): the agent starts every component through setpriv';

export async function checkSetpriv(path: string): Promise<CheckResult> {
  try {
    await access(path, constants.X_OK);
  } catch (e) {
    const why =
      (e as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'is missing'
        : `cannot be run (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    return fail('setpriv', `${path} ${why}`, FIX);
  }
  // Run once: a file that is there but not the real thing (a broken link target, another architecture) says so here.
  try {
    const { stdout } = await run(path, ['--version'], { timeout: 5000 });
    return pass('setpriv', `${path} (${stdout.trim().split('\n')[0]})`);
  } catch (e) {
    return fail('setpriv', `${path} --version failed: ${(e as Error).message.split('\n')[0]}`, FIX);
  }
}
