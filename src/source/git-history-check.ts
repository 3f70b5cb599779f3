// The check that a new tip descends from the commit applied last (SPEC §7: a force-push is refused unless allowed),
// deepening a shallow cache as far as it must. Apart from git-source.ts because it is a question about history,
// asked once per new tip, with its own limits and answers.
import { isCommitId } from '../git/commit-id.js';
import { searchAncestor } from '../git/git-ancestry.js';
import type { GitRemoteCache } from '../git/git-remote-cache.js';
import { OperationError } from '../core/errors.js';
import { GIT_SOURCE_DEFAULTS as DEFAULTS, type GitSourceOptions } from './git-source-options.js';

const FIRST_DEEPEN = 16;

/**
 * Refuses a tip that does not descend from the last applied commit. A shallow cache is deepened 16, 32, 64…
 * generations at a time until the commit is found, the whole history is present without it (a rewrite, proven),
 * or maxHistoryCommits is reached (unverified: refused too, since it cannot be told from a rewrite).
 */
export async function checkHistory(
  tip: string,
  gitdir: string,
  cache: object,
  opts: GitSourceOptions,
  remote: GitRemoteCache | undefined,
  branch: string,
): Promise<{ code: string; reason: string } | undefined> {
  const last = opts.lastAppliedCommit();
  if (opts.allowHistoryRewrite || last === undefined || !isCommitId(last) || last === tip) return undefined;
  const max = opts.maxHistoryCommits ?? DEFAULTS.maxHistoryCommits;
  let deepened = 0;
  let frontier: string | undefined;
  for (let step = FIRST_DEEPEN; ; step *= 2) {
    const r = await searchAncestor({ gitdir, tip, ancestor: last, maxCommits: max, cache });
    if (r.kind === 'found') return undefined;
    if (r.kind === 'incomplete') {
      const now = [...r.frontier].sort().join(' ');
      // A deepening that brought none of the missing commits: the cache's shallow boundary names commits it does not
      // hold (a fetch cut short by a kill, between its writes), and the server, told they are here, never sends
      // them. Not a history that cannot be verified: the next look fetches afresh.
      if (now === frontier && remote) {
        remote.distrust();
        throw new OperationError(
          'KS_GIT_FETCH_FAILED',
          `the local copy of ${branch} lacks ${r.frontier.map((c) => c.slice(0, 12)).join(', ')}, which it counts as fetched (a fetch cut short?): fetching afresh`,
        );
      }
      frontier = now;
    }
    if (r.kind === 'absent')
      return {
        code: 'KS_HISTORY_REWRITE',
        reason: `${tip.slice(0, 12)} does not descend from the last applied commit ${last.slice(0, 12)}: the history of ${branch} was rewritten (force-push); refused unless history rewrites are allowed`,
      };
    if (r.kind === 'too-deep' || !remote || deepened >= max)
      return {
        code: 'KS_HISTORY_UNVERIFIED',
        reason: `cannot tell whether ${tip.slice(0, 12)} descends from the last applied commit ${last.slice(0, 12)}: not found within ${max} commits of ${branch}'s history; refused as a possible rewrite unless history rewrites are allowed`,
      };
    const by = Math.min(step, max - deepened);
    await remote.deepen(by);
    deepened += by;
  }
}
