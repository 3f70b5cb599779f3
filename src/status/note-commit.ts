// The notes commits of the Git notes reporter (git-notes-reporter.ts): one status line merged into a commit's note, on
// top of the device's last notes commit or as a new root; and the questions the reporter asks of a notes line's history.
import { existsSync, statSync } from 'node:fs';
import * as fs from 'node:fs';
import { join } from 'node:path';
import git, { Errors } from 'isomorphic-git';
import type { CommitStatus } from './commit-status.js';
import { findNote, setNote } from './notes-tree.js';
import { mergeStatusNote } from './status-note.js';

export interface NoteCommitOptions {
  author: { name: string; email: string };
  /** ms since the epoch: the commit's time. */
  at: number;
  /** A root commit holding `tip`'s notes, rather than one on top of `tip`. */
  root?: boolean;
}

/** A notes commit whose tree is `tip`'s with `s`'s line merged into the commit's note. */
export async function noteCommit(gitdir: string, tip: string | undefined, s: CommitStatus, o: NoteCommitOptions): Promise<string> {
  // One cache for the reads of one commit: a compacted cache keeps its objects in a pack, read once here.
  const cache = {};
  const tree = tip ? (await git.readCommit({ fs, gitdir, oid: tip, cache })).commit.tree : undefined;
  const existing = tree ? await findNote(gitdir, tree, s.commit, cache) : undefined;
  const blob = await git.writeBlob({ fs, gitdir, blob: Buffer.from(mergeStatusNote(existing, s), 'utf8') });
  const newTree = await setNote(gitdir, tree, s.commit, blob, cache);
  const sig = { ...o.author, timestamp: Math.floor(o.at / 1000), timezoneOffset: 0 };
  return git.writeCommit({
    fs,
    gitdir,
    commit: { message: `${s.context}: ${s.state} ${s.commit}\n`, tree: newTree, parent: tip && !o.root ? [tip] : [], author: sig, committer: sig },
  });
}

/** Whether `ancestor` is behind `tip` in the cache; false when the cache lacks it (it cannot be ours then). */
export async function isAncestor(gitdir: string, ancestor: string, tip: string): Promise<boolean> {
  try {
    await git.readCommit({ fs, gitdir, oid: ancestor });
    return await git.isDescendent({ fs, gitdir, oid: tip, ancestor, depth: -1 });
  } catch (e) {
    if (e instanceof Errors.NotFoundError || e instanceof Errors.ObjectTypeError) return false;
    throw e;
  }
}

/** `<path>/.git` for a work tree, `<path>` for a bare repository, undefined for anything else. */
export function localGitdir(path: string): string | undefined {
  const dotGit = join(path, '.git');
  if (existsSync(dotGit) && statSync(dotGit).isDirectory()) return dotGit;
  if (existsSync(join(path, 'HEAD')) && existsSync(join(path, 'objects'))) return path;
  return undefined;
}
