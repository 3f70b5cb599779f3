// The work directory belongs to the run user and survives upgrades; the agent creates it and hands it over.
import { lchown, lstat, mkdir, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { RuntimeError } from './runtime-error.js';
import { safeDirectory } from '../state-dir/safe-path.js';

/**
 * Creates `workDir` (mode 0750; missing parents 0755 so the run user can reach it) and, when `owner` is given
 * (the agent is root), makes it the owner's. Refuses anything but a real directory (a planted symlink), and a
 * parent reached through a link or a directory another user can change (KS_STATE_DIR_UNSAFE): the work directory
 * itself is the run user's, and nothing is ever reached through it.
 */
export async function prepareWorkDir(workDir: string, owner?: { uid: number; gid: number }): Promise<void> {
  safeDirectory(dirname(workDir), { mode: 0o755 });
  try {
    await mkdir(workDir, { mode: 0o750 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = await lstat(workDir);
  if (!st.isDirectory())
    throw new RuntimeError('KS_WORK_DIR_INVALID', `work directory ${workDir} is not a directory`, { path: workDir });
  if (owner && (st.uid !== owner.uid || st.gid !== owner.gid)) await lchown(workDir, owner.uid, owner.gid);
}

/**
 * Gives a whole tree to `uid:gid` without following links (lchown, no descent into symlinks). Only for trees
 * nobody else can write while it runs, such as the agent's private staging directory: in a directory the run
 * user can write, swapping a directory for a link between the check and the descent would redirect it.
 */
export async function chownTree(root: string, uid: number, gid: number): Promise<void> {
  await lchown(root, uid, gid);
  const st = await lstat(root);
  if (!st.isDirectory()) return;
  for (const entry of await readdir(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) await chownTree(path, uid, gid);
    else await lchown(path, uid, gid);
  }
}
