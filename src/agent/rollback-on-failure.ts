// `--on-failure rollback` (SPEC §7): a listener on outcomes. When a commit's apply fails, the device goes back to the
// newest commit that succeeded here, applied as the agent's own rollback (no report of its own; the replay floor
// does not refuse it). The failed commit's report says so ("; rolling back to 3f2a1c0").
import { isCommitId } from '../git/commit-id.js';
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import type { StateStore } from '../store/state-store.js';
import type { Outcomes } from './outcomes.js';

/** The newest commit whose apply succeeded and never failed since, other than `except`. */
export function lastGoodCommit(store: Pick<StateStore, 'history'>, except: string): string | undefined {
  const failed = new Set<string>();
  for (const h of store.history({ limit: 100 })) {
    if (!isCommitId(h.revision) || h.revision === except) continue;
    if (h.outcome === 'failure' && h.summary?.startsWith('interrupted') !== true) failed.add(h.revision);
    if (h.outcome === 'success' && !failed.has(h.revision)) return h.revision;
  }
  return undefined;
}

export function rollBackOnFailure(o: {
  outcomes: Outcomes;
  store: StateStore;
  offer: (r: Revision) => void;
  revisionAt: (commit: string) => Promise<Revision | undefined>;
  log: Logger;
}): () => void {
  const log = o.log.child({ module: 'agent' });
  return o.outcomes.onFailure((failed) => {
    if (!isCommitId(failed.revision)) return undefined;
    const good = lastGoodCommit(o.store, failed.revision);
    if (!good) {
      log.warn(
        { revision: failed.revision },
        'apply failed and no earlier commit succeeded on this device: nothing to roll back to',
      );
      return { then: 'no earlier good commit to roll back to' };
    }
    // Done once the failure is written (outcomes.ts), and asked again when a restart resumes the failed commit: a
    // kill between the failure and the rollback's apply must not leave the device on the failed commit for good.
    const act = () =>
      void o.revisionAt(good).then(
        (rev) => {
          if (!rev)
            return log.error(
              { revision: failed.revision, rollback_to: good },
              'cannot roll back: that commit is no longer in the local clone',
            );
          log.warn(
            { revision: failed.revision, rollback_to: good },
            'apply failed: rolling back to the last commit that succeeded (--on-failure rollback)',
          );
          o.offer({ ...rev, rollback: true });
        },
        (e: Error) => log.error({ err: e, rollback_to: good }, 'rolling back failed'),
      );
    return { then: `rolling back to ${good.slice(0, 7)}`, act };
  });
}
