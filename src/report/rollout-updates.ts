// A device's rollout refs (rollout-refs.ts) as the Git notes reporter keeps them: read from a repository, and the
// updates one status makes of them, pushed with its notes commit (git-notes-reporter.ts).
import * as fs from 'node:fs';
import git from 'isomorphic-git';
import type { ReportSigner } from '../identity/report-signature.js';
import type { CommitStatus } from './commit-status.js';
import { resolveRefIfAny } from './notes-tree.js';
import { ZERO_OID, type RefUpdate } from './receive-pack-push.js';
import { parseRolloutRef, ROLLOUT_PREFIX, rolloutRef } from './rollout-refs.js';

/** This device's rollout refs in `gitdir`, any wave, with their values. */
export async function rolloutRefsOf(gitdir: string, device: string): Promise<Map<string, string>> {
  const refs = new Map<string, string>();
  for (const rest of await git.listRefs({ fs, gitdir, filepath: ROLLOUT_PREFIX.replace(/\/$/, '') })) {
    const ref = `${ROLLOUT_PREFIX}${rest}`;
    if (parseRolloutRef(ref)?.device !== device) continue;
    const oid = await resolveRefIfAny(gitdir, ref);
    if (oid !== undefined) refs.set(ref, oid);
  }
  return refs;
}

/**
 * The rollout ref updates of a status, given this device's rollout refs as they stand (`own`): its ref for this
 * commit set to the notes commit `next`, and deleted every other one whose commit it does not keep. Its refs for
 * this commit in another state or wave go too: one state per device and commit, or a reader could count it twice.
 */
export function rolloutUpdates(
  s: CommitStatus,
  device: string,
  next: string,
  own: ReadonlyMap<string, string>,
  signer?: ReportSigner,
): RefUpdate[] {
  if (!s.rollout) return [];
  const { wave, state, keep } = s.rollout;
  // Ed25519 signs deterministically: the same report by the same key has the same name, so a retry rewrites no ref.
  const target = rolloutRef({ wave, device, commit: s.commit, state }, signer);
  const updates: RefUpdate[] = [];
  if (own.get(target) !== next) updates.push({ ref: target, old: own.get(target) ?? ZERO_OID, new: next });
  for (const [ref, oid] of own) {
    const commit = parseRolloutRef(ref)?.commit;
    if (ref !== target && (commit === s.commit || !keep.includes(commit as string)))
      updates.push({ ref, old: oid, new: ZERO_OID });
  }
  return updates;
}
