// The state directory as the agent will judge it (agent/state-dir.ts: the same rule, not a copy of it), without
// creating or changing anything: an existing directory is checked whole; a missing one by the way to it and by
// whether the agent's user can create it there.
import { constants, lstatSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname } from 'node:path';
import { checkStateDir, lstatIfPresent } from '../agent/state-dir.js';
import { describeUid, safeDirectory, StateDirError } from '../state-dir/safe-path.js';
import { fail, pass, type CheckResult } from './check-result.js';

const FALLBACK_FIX =
  "make it a real directory of the agent's user that no other user can write (chmod 711), or give --state-dir another path";

export async function checkStateDirectory(stateDir: string): Promise<CheckResult> {
  try {
    const st = lstatIfPresent(stateDir);
    if (st) {
      // It exists, and so do its parents: checkStateDir creates nothing then (its mkdir meets EEXIST).
      checkStateDir(stateDir);
      const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
      return pass(
        'state-dir',
        `${stateDir}: owned by ${describeUid(st.uid)}, mode ${mode}, nothing in it another user could have written`,
      );
    }
    // The agent's own walk to it, without `create`: every directory that exists on the way is checked.
    safeDirectory(stateDir);
  } catch (e) {
    if (!(e instanceof StateDirError))
      return fail('state-dir', `${stateDir} cannot be checked: ${(e as Error).message}`, FALLBACK_FIX);
    const { problem, fix } = splitFix(e.message);
    return fail('state-dir', problem, fix ?? FALLBACK_FIX, e.code);
  }
  const parent = nearestExisting(stateDir);
  try {
    await access(parent, constants.W_OK | constants.X_OK);
  } catch {
    return fail(
      'state-dir',
      `${stateDir} does not exist, and the agent's user cannot create it in ${parent}`,
      `create it as root: mkdir -p -m 711 ${stateDir}, or give --state-dir a directory the agent can create`,
    );
  }
  return pass('state-dir', `${stateDir} does not exist yet: the agent creates it (mode 0711) in ${parent}`);
}

/**
 * The agent's refusals end with their fix after a colon (`… (mode 777): chmod go-w /x`); `--json` wants the two
 * apart. A message without such an ending keeps its whole text as the problem.
 */
export function splitFix(message: string): { problem: string; fix?: string } {
  const m = /^(.*?): ((?:chown|chmod|remove|give|use|move) .*)$/s.exec(message);
  return m ? { problem: m[1]!, fix: m[2]! } : { problem: message };
}

/** The closest directory above `path` that is there (one that cannot be looked at, EACCES, is there too). */
export function nearestExisting(path: string): string {
  let at = dirname(path);
  while (at !== dirname(at)) {
    try {
      lstatSync(at);
      return at;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return at;
    }
    at = dirname(at);
  }
  return at;
}
