// A status delivered to a local repository path: the note and the rollout refs written straight into it, no cache and
// no push. Apart from git-notes-reporter.ts, whose remote delivery is long enough on its own.
import * as fs from 'node:fs';
import git from 'isomorphic-git';
import { StatusDeliveryError, type CommitStatus } from './commit-status.js';
import { deliveryError } from './delivery-error.js';
import { deviceNotesRef, deviceOfContext } from './device-notes-ref.js';
import type { GitNotesReporterOptions } from './git-notes-reporter-options.js';
import { localGitdir, noteCommit, type NoteCommitOptions } from './note-commit.js';
import { resolveRefIfAny } from './notes-tree.js';
import { ZERO_OID } from './receive-pack-push.js';
import type { RolloutSeq } from './rollout-seq.js';
import { rolloutRefsOf, rolloutUpdates } from './rollout-updates.js';

/** Writes the note of `s` (and its rollout refs) straight into the local repository `opts.repository`. */
export async function deliverLocalNote(
  opts: GitNotesReporterOptions,
  rollouts: RolloutSeq,
  s: CommitStatus,
  signature: () => NoteCommitOptions,
): Promise<void> {
  const gitdir = localGitdir(opts.repository);
  if (!gitdir) throw new StatusDeliveryError('KS_STATUS_GIT_FAILED', `${opts.repository} is not a Git repository`);
  const device = deviceOfContext(s.context);
  const ref = deviceNotesRef(device);
  try {
    const tip = await resolveRefIfAny(gitdir, ref);
    const next = await noteCommit(gitdir, tip, s, signature());
    await git.writeRef({ fs, gitdir, ref, value: next, force: true });
    const staged = await rollouts.current(s, undefined);
    if (!staged.rollout) return;
    const own = await rolloutRefsOf(gitdir, device);
    for (const u of rolloutUpdates(staged, device, next, own, opts.signer)) {
      if (u.new === ZERO_OID) await git.deleteRef({ fs, gitdir, ref: u.ref });
      else await git.writeRef({ fs, gitdir, ref: u.ref, value: u.new, force: true });
    }
    await rollouts.wroteRollout(staged, undefined);
  } catch (e) {
    throw deliveryError(`writing the note for ${s.commit.slice(0, 12)} in ${opts.repository}`, e, opts.token);
  }
}
