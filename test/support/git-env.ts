// The git CLI of the tests: no user or system configuration, a fixed identity (commits made the same everywhere).
export const GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Keystone Test',
  GIT_AUTHOR_EMAIL: 'test@keystone.invalid',
  GIT_COMMITTER_NAME: 'Keystone Test',
  GIT_COMMITTER_EMAIL: 'test@keystone.invalid',
};

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `git ARGS` in `cwd` with the tests' environment (plus `env`): its stdout, trimmed. */
export async function gitIn(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return (await run('git', args, { cwd, env: { ...GIT_ENV, ...env } })).stdout.trim();
}
