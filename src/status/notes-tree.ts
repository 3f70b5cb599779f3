// Notes trees, flat or fanned out. A notes tree is keyed by the annotated commit's id, nothing more, so the commit
// never has to be present. isomorphic-git's addNote/readNote only know the flat layout, while git itself fans notes
// out (`ab/cdef…`) once there are many; so the tree is read and written here, keeping whichever layout a note has.
import * as fs from 'node:fs';
import git, { Errors, type TreeEntry } from 'isomorphic-git';

/** The note for `rest` under `tree`: `rest` itself, or `rest[0..2]/…` recursively (git's fanout). */
export async function findNote(gitdir: string, tree: string, rest: string): Promise<string | undefined> {
  const entries = (await git.readTree({ fs, gitdir, oid: tree })).tree;
  const flat = entries.find((e) => e.path === rest && e.type === 'blob');
  if (flat) return Buffer.from((await git.readBlob({ fs, gitdir, oid: flat.oid })).blob).toString('utf8');
  const sub = entries.find((e) => e.path === rest.slice(0, 2) && e.type === 'tree');
  return sub && rest.length > 2 ? findNote(gitdir, sub.oid, rest.slice(2)) : undefined;
}

/** `tree` with the note for `rest` set to `blob`, where it already is, else flat at this level. Returns the new tree. */
export async function setNote(gitdir: string, tree: string | undefined, rest: string, blob: string): Promise<string> {
  const entries: TreeEntry[] = tree ? (await git.readTree({ fs, gitdir, oid: tree })).tree.map((e) => ({ ...e })) : [];
  const flat = entries.find((e) => e.path === rest && e.type === 'blob');
  const sub = entries.find((e) => e.path === rest.slice(0, 2) && e.type === 'tree');
  if (flat) flat.oid = blob;
  else if (sub && rest.length > 2 && (await findNote(gitdir, sub.oid, rest.slice(2))) !== undefined) sub.oid = await setNote(gitdir, sub.oid, rest.slice(2), blob);
  else entries.push({ mode: '100644', path: rest, oid: blob, type: 'blob' });
  return git.writeTree({ fs, gitdir, tree: entries });
}

/** The note for `commit` in the notes commit `notesCommit`. */
export async function noteAt(gitdir: string, notesCommit: string, commit: string): Promise<string | undefined> {
  const { tree } = (await git.readCommit({ fs, gitdir, oid: notesCommit })).commit;
  return findNote(gitdir, tree, commit);
}

/** The commit a ref points at, or undefined when the repository has no such ref. */
export async function resolveRefIfAny(gitdir: string, ref: string): Promise<string | undefined> {
  try {
    return await git.resolveRef({ fs, gitdir, ref });
  } catch (e) {
    if (e instanceof Errors.NotFoundError) return undefined;
    throw e;
  }
}
