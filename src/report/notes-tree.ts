// Notes trees, flat or fanned out. A notes tree is keyed by the annotated commit's id, nothing more, so the commit
// never has to be present. isomorphic-git's addNote/readNote only know the flat layout, while git itself fans notes
// out (`ab/cdef…`) once there are many; so the tree is read and written here, keeping whichever layout a note has.
//
// Writing fans out too, as git does: a flat tree of every note a device ever wrote is one tree object that grows with
// each commit reported, and each report wrote it again whole, into the notes cache and onto the wire (10,000 notes:
// ~680 kB a report; issue 28). So a level holds at most FANOUT_AT notes of its own: the note that would pass that
// moves them all into two-hex-digit subtrees, and a report then rewrites one small tree per level (~7.5 kB at the top,
// a few hundred bytes below at 10,000 notes). Readers (ours, `git notes`, `git log --notes`) read either layout.
import * as fs from 'node:fs';
import git, { Errors, type TreeEntry } from 'isomorphic-git';

/** Notes one tree level holds flat before they move into subtrees (git's own fanout starts at about as many). */
export const FANOUT_AT = 256;

const HEX = /^[0-9a-f]+$/;

/** The note for `rest` under `tree`: `rest` itself, or `rest[0..2]/…` recursively (git's fanout). */
export async function findNote(
  gitdir: string,
  tree: string,
  rest: string,
  cache?: object,
): Promise<string | undefined> {
  const entries = (await git.readTree({ fs, gitdir, oid: tree, cache })).tree;
  const flat = entries.find((e) => e.path === rest && e.type === 'blob');
  if (flat) return Buffer.from((await git.readBlob({ fs, gitdir, oid: flat.oid, cache })).blob).toString('utf8');
  const sub = entries.find((e) => e.path === rest.slice(0, 2) && e.type === 'tree');
  return sub && rest.length > 2 ? findNote(gitdir, sub.oid, rest.slice(2), cache) : undefined;
}

/**
 * `tree` with the note for `rest` set to `blob`: where it already is, else in the subtree its first two digits name
 * (made if the level is fanned out), else flat at this level, fanning the level out first when it holds FANOUT_AT notes. Entries that are neither a note
 * nor a fanout subtree are dropped from each level rewritten: a device's notes ref is written by that device alone,
 * and anything else in it (a pusher's junk) would otherwise be written again with every report. Returns the new tree.
 */
export async function setNote(
  gitdir: string,
  tree: string | undefined,
  rest: string,
  blob: string,
  cache?: object,
): Promise<string> {
  const entries = tree
    ? (await git.readTree({ fs, gitdir, oid: tree, cache })).tree
        .filter((e) => isNotesEntry(e, rest.length))
        .map((e) => ({ ...e }))
    : [];
  const flat = entries.find((e) => e.path === rest && e.type === 'blob');
  if (flat) {
    flat.oid = blob;
    return git.writeTree({ fs, gitdir, tree: entries });
  }
  const key = rest.slice(0, 2);
  const sub = entries.find((e) => e.path === key && e.type === 'tree');
  if (sub) {
    sub.oid = await setNote(gitdir, sub.oid, rest.slice(2), blob, cache);
    return git.writeTree({ fs, gitdir, tree: entries });
  }
  const notes = entries.filter((e) => e.type === 'blob').length;
  const fannedOut = entries.some((e) => e.type === 'tree');
  if (rest.length <= 2 || (!fannedOut && notes < FANOUT_AT)) {
    entries.push({ mode: '100644', path: rest, oid: blob, type: 'blob' });
    return git.writeTree({ fs, gitdir, tree: entries });
  }
  if (notes >= FANOUT_AT) return setNote(gitdir, await fanOut(gitdir, entries, rest.length, cache), rest, blob, cache);
  // A level fanned out already takes a new note in a subtree of its own, as git would write it.
  entries.push({
    mode: '040000',
    path: key,
    oid: await setNote(gitdir, undefined, rest.slice(2), blob, cache),
    type: 'tree',
  });
  return git.writeTree({ fs, gitdir, tree: entries });
}

/** The level `entries` with every flat note moved into the subtree of its first two digits (merged with one there). */
async function fanOut(
  gitdir: string,
  entries: TreeEntry[],
  length: number,
  cache: object | undefined,
): Promise<string> {
  const moved = new Map<string, TreeEntry[]>();
  for (const e of entries.filter((x) => x.type === 'blob')) {
    const key = e.path.slice(0, 2);
    moved.set(key, [...(moved.get(key) ?? []), { ...e, path: e.path.slice(2) }]);
  }
  const level = entries.filter((e) => e.type === 'tree');
  for (const [key, notes] of moved) {
    const sub = level.find((e) => e.path === key);
    const below = sub
      ? (await git.readTree({ fs, gitdir, oid: sub.oid, cache })).tree.filter((e) => isNotesEntry(e, length - 2))
      : [];
    const oid = await git.writeTree({
      fs,
      gitdir,
      tree: [...below.filter((e) => !notes.some((n) => n.path === e.path)), ...notes],
    });
    if (sub) sub.oid = oid;
    else level.push({ mode: '040000', path: key, oid, type: 'tree' });
  }
  return git.writeTree({ fs, gitdir, tree: level });
}

/** A note at a level whose notes have `length` digits left, or a subtree of the fanout. */
function isNotesEntry(e: TreeEntry, length: number): boolean {
  if (!HEX.test(e.path)) return false;
  if (e.type === 'blob') return e.path.length === length;
  return e.type === 'tree' && e.path.length === 2 && length > 2;
}

/** The note for `commit` in the notes commit `notesCommit`. */
export async function noteAt(
  gitdir: string,
  notesCommit: string,
  commit: string,
  cache?: object,
): Promise<string | undefined> {
  const { tree } = (await git.readCommit({ fs, gitdir, oid: notesCommit, cache })).commit;
  return findNote(gitdir, tree, commit, cache);
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
