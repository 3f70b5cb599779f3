// The run command resolved before spawning, as the run user's execvp would: a missing or non-executable command
// is a start failure with a clear message, not an exit 127 from setpriv noticed later as a crash.
import { stat } from 'node:fs/promises';
import { delimiter, isAbsolute, resolve } from 'node:path';
import type { RunIdentity } from './privileges.js';

/** The default PATH of a component whose recipe sets none. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** True when `identity` may execute a file with this mode and owner (root: any x bit). */
export function mayExecute(
  st: { mode: number; uid: number; gid: number },
  identity: Pick<RunIdentity, 'uid' | 'gids'>,
): boolean {
  if (identity.uid === 0) return (st.mode & 0o111) !== 0;
  if (st.uid === identity.uid) return (st.mode & 0o100) !== 0;
  if (identity.gids.includes(st.gid)) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

async function executable(path: string, identity: Pick<RunIdentity, 'uid' | 'gids'>): Promise<boolean> {
  try {
    const st = await stat(path);
    return st.isFile() && mayExecute(st, identity);
  } catch {
    return false;
  }
}

/** Why a command could not be resolved. */
export type ResolveResult = { ok: true; path: string } | { ok: false; reason: string };

/**
 * Resolves `command` to an absolute path: with a '/' it is relative to `cwd` (`./influxd`), otherwise it is
 * searched on `pathVar` (empty or relative entries relative to `cwd`). The file must be executable by `identity`.
 */
export async function resolveCommand(
  command: string,
  opts: { cwd: string; pathVar: string | undefined; identity: Pick<RunIdentity, 'uid' | 'gids'> },
): Promise<ResolveResult> {
  if (command.includes('/')) {
    const path = isAbsolute(command) ? command : resolve(opts.cwd, command);
    return (await executable(path, opts.identity))
      ? { ok: true, path }
      : { ok: false, reason: `${path} does not exist or is not executable by the run user` };
  }
  const dirs = (opts.pathVar ?? DEFAULT_PATH).split(delimiter);
  for (const dir of dirs) {
    const path = resolve(opts.cwd, dir, command);
    if (await executable(path, opts.identity)) return { ok: true, path };
  }
  return {
    ok: false,
    reason: `"${command}" was not found on PATH (${opts.pathVar ?? DEFAULT_PATH}) as an executable for the run user`,
  };
}
