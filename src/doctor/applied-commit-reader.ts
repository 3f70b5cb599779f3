// A reader of the commit a Git-following agent applied last, from what is already on the device: the local
// repository itself, or the agent's cache of a remote (`<state-dir>/git/<key>/gen-N`, bare repositories of the
// followed branch). Never fetched: doctor reports on the device as it is. Loaded only for --repo (isomorphic-git).
import fs from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { parseGitRepo } from '../git/git-repo-location.js';
import { GitTreeReader, locateGitRepository, type GitLocation } from '../source/git-tree-reader.js';
import type { RepoReader } from '../source/repo-reader.js';
import { GIT_CACHE_DIR } from '../state-dir/layout.js';

/** Undefined when the commit is in none of the places the agent keeps it. */
export async function appliedCommitReader(opts: {
  repo: string;
  commit: string;
  branch: string;
  stateDir: string;
}): Promise<RepoReader | undefined> {
  const location = parseGitRepo(opts.repo);
  const candidates: GitLocation[] = [];
  if (location.kind === 'local') candidates.push(locateGitRepository(location.path));
  else {
    // Every generation of every cached remote, newest first: the cache's key is not worked out again here.
    const cache = join(opts.stateDir, GIT_CACHE_DIR);
    for (const key of await readdir(cache).catch(() => [] as string[])) {
      const gens = (await readdir(join(cache, key)).catch(() => [] as string[]))
        .map((n) => /^gen-(\d+)$/.exec(n))
        .filter((m) => m !== null)
        .sort((a, b) => Number(b[1]) - Number(a[1]));
      for (const g of gens) candidates.push({ gitdir: join(cache, key, g[0]) });
    }
  }
  for (const loc of candidates) {
    try {
      await git.readCommit({ fs, gitdir: loc.gitdir, oid: opts.commit });
      return new GitTreeReader(loc, opts.commit, opts.branch);
    } catch {
      // not in this one
    }
  }
  return undefined;
}
