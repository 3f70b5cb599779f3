// Step 5a of the spine (take-revision.ts): the agent version a revision asks for (SPEC §17), switched to before
// anything else is done; the revision is then applied by the new agent, which must adopt every component as it runs
// and report success. Ends the revision (handed over, deferred, refused, waiting for a lock, failed) or lets it go on.
import type { AgentUpdater } from '../agent-update/agent-updater.js';
import { lockOptions, waitForLocks, type WaitOutcome, type WaitSteps } from './device-waits.js';
import type { Engine } from './engine.js';
import type { RevisionInfo } from './engine-types.js';
import type { Candidate } from './rollout-holds.js';

/** What this step needs of the spine's (RevisionSteps extends it). */
export interface UpdateSteps extends WaitSteps {
  engine: Pick<Engine, 'lockHolders'>;
}

/**
 * How the step ended the revision (a subset of take-revision.ts's RevisionOutcome), or `proceed`: the apply goes on,
 * with `updateFailed` when the agent update it asks for was put back here (its plan is applied, its outcome `failure`).
 */
export type UpdateStepOutcome =
  | WaitOutcome
  | { kind: 'handover' }
  | { kind: 'deferred'; reason: string }
  | { kind: 'applied'; outcome: 'failure' }
  | { kind: 'proceed'; updateFailed?: string };

export async function agentUpdateStep(
  c: Pick<Candidate, 'rev' | 'state' | 'planFile' | 'target' | 'began' | 'agent'> & { waveName?: string },
  info: RevisionInfo,
  update: AgentUpdater,
  s: UpdateSteps,
): Promise<UpdateStepOutcome> {
  const { rev, state, planFile, target, waveName, began } = c;
  // Not while a component holds its update lock (SPEC §19): switched now, the new agent would wait out its trial
  // deadline on the lock and be put back, and barred, for a device that was merely busy.
  if (c.agent && s.lockWait && !rev.overrideLocks && update.trialCommit() !== rev.id) {
    const holders = await s.engine.lockHolders(state, lockOptions(rev, s)!, rev.id);
    if (holders.length) return waitForLocks(c, holders, s);
  }
  const d = await update.decide(c.agent, rev, rev.reader, { unsigned: info.unsigned });
  if (d.kind === 'handover') return { kind: 'handover' };
  if (d.kind === 'deferred') {
    s.log.info({ revision: rev.id, reason: d.reason }, 'agent update: not taken up yet');
    return { kind: 'deferred', reason: d.reason };
  }
  if (d.kind === 'refuse') {
    s.outcomes.rejected({
      revision: rev.id,
      planFile,
      ...(target !== undefined && { target }),
      ...(waveName !== undefined && { wave: waveName }),
      reason: d.reason,
      began,
      silent: rev.rollback === true,
    });
    s.log.error({ revision: rev.id, reason: d.reason }, 'revision refused; still running the previous one');
    return { kind: 'rejected', reason: d.reason, passing: false };
  }
  const updateFailed = d.kind === 'failed' ? d.reason : undefined;
  const missing = update.settles(rev.id, c.agent) ? update.notAdopted() : [];
  if (missing.length) {
    // Not applied by this version: the one put back takes what runs up again, and finds this commit failed.
    const reason = `KS_AGENT_UPDATE_FAILED: agent ${packageVersionOf(c.agent)} did not adopt ${missing.join(', ')} as they ran before the switch`;
    s.outcomes.failedUnapplied(info, reason, began);
    await update.settle('failure', reason, { blocks: true });
    return { kind: 'applied', outcome: 'failure' };
  }
  return { kind: 'proceed', ...(updateFailed !== undefined && { updateFailed }) };
}

function packageVersionOf(section: { version: string } | undefined): string {
  return section?.version ?? '?';
}
