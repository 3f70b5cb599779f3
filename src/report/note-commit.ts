// The notes commits of the Git notes reporter (git-notes-reporter.ts): one status line merged into a commit's note, on
// top of the device's last notes commit or as a new root; and the questions the reporter asks of a notes line's history.
import { existsSync, statSync } from 'node:fs';
import * as fs from 'node:fs';
import { join } from 'node:path';
import git, { Errors } from 'isomorphic-git';
import type { ReportSigner } from '../identity/report-signature.js';
import type { CommitStatus } from './commit-status.js';
import { findNote, setNote } from './notes-tree.js';
import { mergeStatusNote } from './status-note.js';

export interface NoteCommitOptions {
  author: { name: string; email: string };
  /** ms since the epoch: the commit's time. */
  at: number;
  /** A root commit holding `tip`'s notes, rather than one on top of `tip`. */
  root?: boolean;
  /** Signs the device's entry (SPEC §15). */
  signer?: ReportSigner;
  /** The device's certificate, published beside its notes (CERTIFICATE_ENTRY) for readers that find none in devices/. */
  certificate?: string;
}

/**
 * The name of the device's certificate in its notes tree: not a note (not hex), so git and every notes reader pass it
 * by; fleet status reads it (SPEC §15: "a device publishes its own beside its reports").
 */
export const CERTIFICATE_ENTRY = 'keystone-device.cert';

/** A notes commit whose tree is `tip`'s with `s`'s line merged into the commit's note. */
export async function noteCommit(
  gitdir: string,
  tip: string | undefined,
  s: CommitStatus,
  o: NoteCommitOptions,
): Promise<string> {
  // One cache for the reads of one commit: a compacted cache keeps its objects in a pack, read once here.
  const cache = {};
  const tree = tip ? (await git.readCommit({ fs, gitdir, oid: tip, cache })).commit.tree : undefined;
  const existing = tree ? await findNote(gitdir, tree, s.commit, cache) : undefined;
  const blob = await git.writeBlob({ fs, gitdir, blob: Buffer.from(mergeStatusNote(existing, s, o.signer), 'utf8') });
  let newTree = await setNote(gitdir, tree, s.commit, blob, cache);
  if (o.certificate !== undefined) newTree = await withCertificate(gitdir, newTree, o.certificate, cache);
  const sig = { ...o.author, timestamp: Math.floor(o.at / 1000), timezoneOffset: 0 };
  return git.writeCommit({
    fs,
    gitdir,
    commit: {
      message: `${s.context}: ${s.state} ${s.commit}\n`,
      tree: newTree,
      parent: tip && !o.root ? [tip] : [],
      author: sig,
      committer: sig,
    },
  });
}

/** `tree` with the certificate at its top (setNote keeps notes only: it is put back each time). */
async function withCertificate(gitdir: string, tree: string, certificate: string, cache: object): Promise<string> {
  const oid = await git.writeBlob({ fs, gitdir, blob: Buffer.from(certificate, 'utf8') });
  const entries = (await git.readTree({ fs, gitdir, oid: tree, cache })).tree.filter(
    (e) => e.path !== CERTIFICATE_ENTRY,
  );
  return git.writeTree({
    fs,
    gitdir,
    tree: [...entries, { mode: '100644', path: CERTIFICATE_ENTRY, oid, type: 'blob' }],
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
