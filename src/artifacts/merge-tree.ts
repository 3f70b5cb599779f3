// Moves a staged tree into a live directory without ever following a link that is already there: the work
// directory is writable by the component's run user, who could plant one to redirect the agent's writes.
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Moves every entry of `src` (our own files and directories) into `dest`, replacing what is there: a file
 * replaces a file or link atomically (rename); a directory merges into a real directory and replaces anything
 * else. Symlinks in `dest` are replaced, never traversed. `src` is consumed.
 */
export async function mergeTree(src: string, dest: string): Promise<void> {
  await mkdir(dest, { recursive: true, mode: 0o755 });
  for (const name of await readdir(src)) {
    const from = join(src, name);
    const to = join(dest, name);
    const [fromStat, toStat] = await Promise.all([lstat(from), lstatOrUndefined(to)]);
    if (fromStat.isDirectory() && toStat?.isDirectory()) {
      await mergeTree(from, to);
      continue;
    }
    // rename() replaces a file or a symlink (the link itself, not its target) but not a directory.
    if (toStat?.isDirectory()) await rm(to, { recursive: true, force: true });
    else if (toStat !== undefined && fromStat.isDirectory()) await rm(to, { force: true });
    await rename(from, to);
  }
}

async function lstatOrUndefined(path: string) {
  try {
    return await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}
