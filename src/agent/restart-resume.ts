// After an agent restart (SPEC §5, §14, §17): what the device takes up again from its local clone before the source's
// first look, and what it does when the first revision offered after the restart is refused. Apart from agent.ts,
// which assembles the agent and wires these to its loop.
import { isCommitId } from '../git/commit-id.js';
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import type { StateStore } from '../store/state-store.js';
import type { AgentUpdater } from '../agent-update/agent-updater.js';
import type { Engine } from './engine.js';
import type { RevisionQueue } from './revision-queue.js';

export interface RestartResumeDeps {
  store: StateStore;
  /** Read when asked: whether a revision is loaded since the restart. */
  engine: Pick<Engine, 'desired'>;
  queue: Pick<RevisionQueue, 'enqueue' | 'idle' | 'pending'>;
  log: Logger;
  agentUpdate?: Pick<AgentUpdater, 'trialCommit'>;
}

export class RestartResume {
  /**
   * How to read a commit back from the local clone (the Git source hands it over in restoreHolds); undefined for a
   * directory, whose earlier content is gone.
   */
  private loadCommit: ((commit: string) => Promise<Revision | undefined>) | undefined;
  private reloadedApplied = false;

  constructor(private readonly d: RestartResumeDeps) {}

  /**
   * After a restart the engine has no revision loaded until one is applied: an adopted component that exits cannot be
   * restarted, and an apply a kill cut short stays half done. When the first revision offered is refused, nothing
   * else would be applied until the next valid commit, however long that takes: the commit applied last is read back
   * from the clone and applied again instead (once per run), as it would have been had it still been the tip.
   */
  reloadApplied(refused: Revision): void {
    const { store, engine, queue, log } = this.d;
    const loadCommit = this.loadCommit;
    const applied = store.appliedRevision()?.id;
    if (
      this.reloadedApplied ||
      engine.desired ||
      !loadCommit ||
      applied === undefined ||
      !isCommitId(applied) ||
      applied === refused.id
    )
      return;
    this.reloadedApplied = true;
    void loadCommit(applied).then(
      (r) => {
        if (!r)
          return log.warn(
            { revision: applied, refused: refused.id },
            'the revision applied last is no longer in the local clone: what was adopted runs on as it is until a valid revision comes',
          );
        if (queue.pending || engine.desired) return;
        log.info(
          { revision: applied, refused: refused.id },
          'applying again the revision applied last: nothing valid is loaded since the restart',
        );
        queue.enqueue(r);
      },
      (e: Error) => log.error({ revision: applied, err: e }, 'cannot read back the revision applied last'),
    );
  }

  /**
   * From the local clone (`load`): the commit applied last is resumed at once (its adopted instances health-checked,
   * supervision back) rather than at the first look, then the commits held at the gate when the agent last stopped
   * are held again (SPEC §14). `load` is kept for reloadApplied().
   */
  async restoreHolds(load: (commit: string) => Promise<Revision | undefined>): Promise<void> {
    const { store, engine, queue, log } = this.d;
    this.loadCommit = load;
    // What runs is taken up before the first look (which may wait for the device's place in the poll interval).
    const applied = store.appliedRevision()?.id;
    if (applied !== undefined && isCommitId(applied) && !engine.desired) {
      const rev = await load(applied).catch(() => undefined);
      if (rev) {
        queue.enqueue(rev);
        await queue.idle();
      }
    }
    // A new agent version on probation (SPEC §17) takes up the commit it was switched to for now, from the clone:
    // its deadline runs from its start, not from its first look.
    const proving = this.d.agentUpdate?.trialCommit();
    if (proving !== undefined && isCommitId(proving) && proving !== applied) {
      const rev = await load(proving).catch(() => undefined);
      if (rev) {
        queue.enqueue(rev);
        await queue.idle();
      }
    }
    // Oldest first: each is verified, resolved and held again as when it came; the newest ends first in line.
    for (const id of store.heldCommits().reverse()) {
      const rev = await load(id).catch(() => undefined);
      if (!rev) {
        log.warn({ revision: id }, 'a commit held before the restart is no longer in the local clone: not held again');
        continue;
      }
      queue.enqueue(rev);
      await queue.idle();
    }
  }
}
