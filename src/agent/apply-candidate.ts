// Step 5 of taking a revision up (take-revision.ts has 1–4), also where a held commit goes once its gate opens: its
// downloads and window, the agent update, then the apply or the resume. Decides and never records: outcomes.ts writes.
import type { Reconcile } from '../core/diff.js';
import { agentUpdateStep } from './agent-update-step.js';
import { downloadsAndWindow, lockOptions, waitForLocks } from './device-waits.js';
import type { Outcomes } from './outcomes.js';
import type { RevisionOutcome, RevisionSteps } from './revision-steps.js';
import { stateDigest } from './rollout-gate.js';
import type { Candidate } from './rollout-holds.js';

/** Step 5, also where a held commit goes once its gate opens: apply it, or resume the revision the device runs. */
export async function applyCandidate(
  c: Omit<Candidate, 'rollout' | 'wave' | 'waveName' | 'reason' | 'checkedAt'> & { waveName?: string },
  s: RevisionSteps,
): Promise<RevisionOutcome> {
  const { rev, state, planFile, target, signedAt, signers, waveName, began } = c;
  // Artifacts are pinned by digest, not listed in SHA256SUMS: they come from the revision's own (unverified) reader.
  s.useReader?.(rev.reader);
  const info = {
    id: rev.id,
    source: rev.source,
    planFile,
    ...(target !== undefined && { target }),
    identity: s.identity,
    unsigned: s.trust.unsigned,
    ...(signedAt !== undefined && { signedAt }),
    ...(signers !== undefined && { signers }),
    ...(waveName !== undefined && { wave: waveName }),
  };
  const standing = s.outcomes.standing(rev, { identity: s.identity, loaded: s.engine.loaded === rev.id });
  // Decided between its hold and its gate opening (step 4 said so for a revision not held).
  if (standing.kind === 'current' || standing.kind === 'failed-before') return { kind: standing.kind };
  // 5'. What the revision downloads, at once, and when this device may apply it (SPEC §19). What runs (resumed) and
  // an apply cut short (finished) are not new; a rollback repairs a failure now; `apply --now` overrides the window;
  // the commit a new agent version is on trial for was switched to inside its window.
  if (standing.kind !== 'resume') {
    const held = await downloadsAndWindow(
      c,
      standing.kind === 'continue' || s.agentUpdate?.trialCommit() === rev.id,
      s,
    );
    if (held) return held;
  }
  // 5a. The agent version the revision asks for (SPEC §17): switched to before anything else is done, and the
  // revision is applied by the new agent, which must adopt every component as it runs and report success
  // (agent-update-step.ts). Put back here, its plan is still applied, and the outcome is `failure` (`updateFailed`).
  const update = s.agentUpdate;
  let updateFailed: string | undefined;
  if (update && standing.kind !== 'resume') {
    const step = await agentUpdateStep(c, info, update, s);
    if (step.kind !== 'proceed') return step;
    updateFailed = step.updateFailed;
  }
  if (standing.kind === 'resume') {
    const r = await s.engine.apply(state, info);
    if (!r.interrupted) s.outcomes.resumed(info, standing.outcome, r);
    // Proven before a power loss cut its probation short (its success is written): it settles now.
    if (update?.settles(rev.id, c.agent, { resumed: true }) && !r.interrupted)
      await update.settle(standing.outcome, `${standing.outcome}: ${r.summary}`, { blocks: false });
    return { kind: 'resumed', outcome: standing.outcome };
  }
  let ticket: ReturnType<Outcomes['begin']> | undefined;
  let r;
  // Update locks (SPEC §19): a new revision does not stop a component that holds its lock, unless the lock's
  // lock_timeout passed or an operator forced this apply. Nothing else (a crash restart, an operator restart) looks.
  const wait = s.lockWait;
  wait?.forget(rev.id);
  // A new agent's trial commit (SPEC §17) waits for a lock at most half its deadline: the locks were free at the
  // switch, and a device merely busy must not put back, and bar, a version that works.
  const proving = update?.trialCommit() === rev.id && c.agent !== undefined;
  const locks = lockOptions(rev, s, proving ? c.agent!.deadline / 2 : undefined);
  try {
    const begin = (reconcile: Reconcile) =>
      (ticket = s.outcomes.begin(info, reconcile, standing, rev.rollback === true, began));
    const done = locks ? await s.engine.apply(state, info, begin, { locks }) : await s.engine.apply(state, info, begin);
    if ('holders' in done) return waitForLocks(c, done.holders, s);
    wait?.done(rev.id);
    r = done;
  } catch (e) {
    // Cut short by an error (the store could not write): the row stays open for the retry to finish.
    if (ticket) s.outcomes.abandoned(ticket);
    throw e;
  } finally {
    // A lock a watcher got for this retake and the engine did not take over (the component is not stopped after all).
    await wait?.releaseKept();
  }
  if (updateFailed !== undefined && !r.interrupted)
    r = { ...r, outcome: 'failure' as const, summary: `${updateFailed}; ${r.summary}` };
  s.outcomes.finish(ticket!, { ...r, stateDigest: stateDigest(state) });
  // On probation (SPEC §17): this outcome decides whether the new agent stays. A failure of the plan puts it back
  // (the commit did not report success) without barring the package: the next commit may try it again.
  if (update?.settles(rev.id, c.agent) && !r.interrupted)
    await update.settle(r.outcome, `${r.outcome}: ${r.summary}`, { blocks: false });
  return { kind: 'applied', outcome: r.interrupted ? 'interrupted' : r.outcome };
}
