// A process component's artifacts, installed so that they end up its run user's without the agent ever chowning inside
// a directory that user can write.
import { lstat, mkdtemp, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import { mergeTree } from '../artifacts/merge-tree.js';
import type { InstallArtifactsFn } from './artifact-installer.js';
import { chownTree } from './work-dir.js';

/**
 * As root with another run user (`owner`), artifacts are installed into a private staging directory (0700, the
 * agent's), given to the run user there, and only then merged into the work directory: chowning inside the
 * user-writable work directory itself could be redirected by a planted link. Without `owner`, straight into it.
 */
export async function installArtifactsAs(
  install: InstallArtifactsFn,
  c: DesiredComponent,
  workDir: string,
  owner: { uid: number; gid: number } | undefined,
): Promise<void> {
  if (!owner) return install(c, workDir);
  const stage = await mkdtemp(join(dirname(workDir), `.${basename(workDir)}.artifacts-`));
  try {
    const tree = join(stage, 'tree');
    await install(c, tree);
    if (!(await exists(tree))) return;
    await chownTree(tree, owner.uid, owner.gid);
    await mergeTree(tree, workDir);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
