// Does a new commit descend from the last applied one? A bounded walk over the commits present in a repository,
// which tells a proven answer from "the history here is too shallow to say".
import fs from 'node:fs';
import git from 'isomorphic-git';

export type AncestrySearch =
  /** `ancestor` is `tip` or one of its ancestors. */
  | { kind: 'found' }
  /** Every ancestor of `tip` is present, down to the root commits, and `ancestor` is not among them: history was rewritten. */
  | { kind: 'absent' }
  /** The walk reached commits whose objects are missing (a shallow clone's boundary): deepen and ask again. */
  | { kind: 'incomplete'; frontier: string[] }
  /** More than `maxCommits` commits were read without an answer. */
  | { kind: 'too-deep' };

export interface AncestrySearchOptions {
  gitdir: string;
  tip: string;
  ancestor: string;
  /** The bound: commits read before giving up (merges widen the walk, so this counts commits, not generations). */
  maxCommits: number;
  /** isomorphic-git's object cache, shared between the walks of one look so a deepened walk re-reads from memory. */
  cache?: object;
}

/**
 * Breadth-first from `tip` over parent links. A parent is compared by id before its object is read, so the
 * common case (the new commit's parent is the last applied one) needs only the new commit itself, which a
 * depth-1 fetch brings. isomorphic-git's isDescendent would do for a full repository, but it cannot tell a
 * shallow boundary from a proof, and it fails on the first missing object.
 */
export async function searchAncestor(opts: AncestrySearchOptions): Promise<AncestrySearch> {
  const { gitdir, tip, ancestor, maxCommits, cache } = opts;
  const seen = new Set<string>([tip]);
  const queue = [tip];
  const frontier: string[] = [];
  let read = 0;
  for (let i = 0; i < queue.length; i++) {
    const oid = queue[i]!;
    if (oid === ancestor) return { kind: 'found' };
    if (read >= maxCommits) return { kind: 'too-deep' };
    let parents: string[];
    try {
      parents = (await git.readCommit({ fs, gitdir, oid, cache })).commit.parent;
      read++;
    } catch (e) {
      if ((e as { code?: string }).code !== 'NotFoundError') throw e;
      frontier.push(oid);
      continue;
    }
    for (const p of parents) {
      if (seen.has(p)) continue;
      seen.add(p);
      queue.push(p);
    }
  }
  return frontier.length > 0 ? { kind: 'incomplete', frontier } : { kind: 'absent' };
}
