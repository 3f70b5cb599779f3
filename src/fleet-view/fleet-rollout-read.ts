// Reading the fleet's rollout refs (rollout-refs.ts) for `fleet status`, from the repository the notes are read from.
// A remote's come with the notes, in the same `git fetch` (ROLLOUT_REFSPEC, fleet-repository.ts): one exchange
// whose ls-refs asks for the prefix alone. `git ls-remote` would be a second exchange, and it sends no ref prefix
// for a pattern, so the host would advertise every notes ref of the fleet once more. The fetch brings the objects
// the refs point at too: the devices' notes commits, mostly the notes tips it fetches anyway.
// Then the refs are local, in the cache or the repository given, and one `git for-each-ref` lists them.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { OperationError } from '../core/errors.js';
import { parseRolloutRef, ROLLOUT_PREFIX, type RolloutRef } from '../report/rollout-refs.js';

const exec = promisify(execFile);

/** The refspec that mirrors every rollout ref into the cache (pruned with the rest: a device deletes old ones). */
export const ROLLOUT_REFSPEC = `+${ROLLOUT_PREFIX}*:${ROLLOUT_PREFIX}*`;

/** Every rollout ref of `gitdir` that parseRolloutRef accepts; a forged or malformed name is not counted. */
export async function readRolloutRefs(
  gitdir: string,
  env: Record<string, string | undefined> = {},
): Promise<RolloutRef[]> {
  let stdout: string;
  try {
    // A few refs per device: ~100 bytes each, so 256 MB is millions of refs.
    ({ stdout } = await exec('git', ['--git-dir', gitdir, 'for-each-ref', '--format=%(refname)', ROLLOUT_PREFIX], {
      env: { ...process.env, ...env },
      maxBuffer: 256 << 20,
    }));
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    if (err.code === 'ENOENT')
      throw new OperationError(
        'KS_GIT_MISSING',
        'keystonectl fleet status needs the git command to read the rollout refs (not found on PATH)',
      );
    throw new OperationError(
      'KS_FLEET_FETCH_FAILED',
      `listing the rollout refs of ${gitdir}: ${(err.stderr ?? err.message).trim().split('\n').pop()}`,
    );
  }
  const out: RolloutRef[] = [];
  for (const line of stdout.split('\n')) {
    const parsed = line === '' ? undefined : parseRolloutRef(line);
    if (parsed) out.push(parsed);
  }
  return out;
}
