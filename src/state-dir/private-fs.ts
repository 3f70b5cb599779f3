// Repository content under the state directory is the agent's user's alone (issue 28, finding 9). The Git cache
// (`<state-dir>/git`) holds every plan's configuration values, other components' included; it was 0755/0644 below a
// 0711 state directory at a guessable path, so any local user, a component's run user among them (`nobody`), could
// read it and so get round the API token that guards those values (SPEC §10). Its directories are now made 0700 and
// its files 0600 as they are written (PRIVATE_FS, the file system isomorphic-git is given), and what an older agent
// left is tightened at start (makePrivate). No other module of isomorphic-git is loaded here: the state directory's
// check imports this file whether or not the agent follows Git.
import fs from 'node:fs';
import { join } from 'node:path';

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

type WriteOptions = Parameters<typeof fs.promises.writeFile>[2];

function privately(options: WriteOptions): WriteOptions {
  if (typeof options === 'string') return { encoding: options, mode: FILE_MODE };
  return { ...(options ?? {}), mode: FILE_MODE };
}

/**
 * node:fs for isomorphic-git, creating directories 0700 and files 0600 (the modes apply when they are created: what
 * was there before is makePrivate's). Reads and everything else are node:fs's own.
 */
export const PRIVATE_FS = {
  promises: {
    ...fs.promises,
    writeFile: (path: string, data: Parameters<typeof fs.promises.writeFile>[1], options?: WriteOptions) =>
      fs.promises.writeFile(path, data, privately(options)),
    mkdir: (path: string, options?: fs.MakeDirectoryOptions | number | string) =>
      fs.promises.mkdir(path, { ...(typeof options === 'object' && options !== null ? options : {}), mode: DIR_MODE }),
  },
};

/**
 * Makes the tree at `path` the owner's alone, if it exists: directories 0700, files 0600 (a group or other bit set
 * is taken away; the owner's bits are left as they are). Links are not followed (the state directory's check refuses
 * any under it). Returns how many modes it changed.
 */
export function makePrivate(path: string): number {
  let changed = 0;
  const pending = [path];
  while (pending.length) {
    const at = pending.pop()!;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    if (st.isSymbolicLink()) continue;
    const mode = st.mode & 0o7777;
    const want = st.isDirectory() ? (mode & 0o700) | DIR_MODE : mode & 0o700;
    if (mode !== want) {
      fs.chmodSync(at, want);
      changed++;
    }
    if (st.isDirectory()) for (const name of fs.readdirSync(at)) pending.push(join(at, name));
  }
  return changed;
}
