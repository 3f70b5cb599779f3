// Reading a commit's statuses back from a repository's notes: every device's own notes ref
// (refs/notes/keystone-devices/*) and the shared ref earlier agents wrote (refs/notes/keystone), so an upgrade loses
// nothing. Where a device has a line in both, its own ref wins: it is the newer writer. Works on any local repository
// (a work tree, a bare clone) that fetched the notes, e.g. with `git fetch origin '+refs/notes/keystone*:refs/notes/keystone*'`
// (one fetch for the whole fleet; isomorphic-git's fetch takes one non-branch ref at a time, so a fleet reader fetches
// with that refspec first).
import * as fs from 'node:fs';
import git from 'isomorphic-git';
import { DEVICE_NOTES_PREFIX, LEGACY_NOTES_REF } from '../report/device-notes-ref.js';
import { noteAt, resolveRefIfAny } from '../report/notes-tree.js';
import { parseStatusNote, type StatusLine } from '../report/status-note.js';

export interface NotedStatusLine extends StatusLine {
  /** The notes ref the line was read from. */
  ref: string;
}

/** The status lines noted on `commit`, one per context, per-device refs first and the shared ref's remaining lines after. */
export async function readStatusNotes(gitdir: string, commit: string): Promise<NotedStatusLine[]> {
  const deviceRefs = (await git.listRefs({ fs, gitdir, filepath: DEVICE_NOTES_PREFIX.replace(/\/$/, '') }))
    .map((r) => `${DEVICE_NOTES_PREFIX}${r}`)
    .sort();
  const out: NotedStatusLine[] = [];
  const seen = new Set<string>();
  for (const ref of [...deviceRefs, LEGACY_NOTES_REF]) {
    const tip = await resolveRefIfAny(gitdir, ref);
    const note = tip === undefined ? undefined : await noteAt(gitdir, tip, commit);
    for (const line of note === undefined ? [] : parseStatusNote(note)) {
      if (seen.has(line.context)) continue;
      seen.add(line.context);
      out.push({ ...line, ref });
    }
  }
  return out;
}
