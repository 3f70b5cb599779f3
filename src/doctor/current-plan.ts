// The plan the agent would run, read the way the agent reads it: for --dir, from the directory now (fleet.toml picks
// it when there is no --plan); for --repo, from the commit it applied last, out of its own Git cache (or the local
// repository), never fetched. A Git device that applied nothing yet has no known plan, which is not a fault.
import type { DesiredState } from '../core/desired-state.js';
import { DirectoryReader } from '../source/directory-reader.js';
import { fullBranchRef, shortBranchRef } from '../git/git-repo-location.js';
import { loadDeviceRevision } from '../load/load-fleet.js';
import type { RepoReader } from '../source/repo-reader.js';
import { isCommitId } from '../git/commit-id.js';
import type { AppliedState } from './applied-state.js';
import { fail, pass, skip, type CheckResult } from './check-result.js';
import type { DoctorSetup } from './doctor-setup.js';
import { directoryPlans, refusalOf } from './first-revision-check.js';

export type CurrentPlan =
  | { kind: 'known'; state: DesiredState; planFile: string; target?: string; from: string }
  /** Nothing to read it from yet: not a failure. */
  | { kind: 'unknown'; why: string }
  /** The agent would refuse it. */
  | { kind: 'invalid'; why: string; fix: string; code?: string };

/**
 * What the agent reads its revision from, as the plan is read: the directory now, or the commit applied last out of
 * the agent's Git cache (or the local repository); `why` when there is nothing to read yet. Never fetched.
 */
export async function currentReader(
  setup: Pick<DoctorSetup, 'source' | 'stateDir'>,
  applied: AppliedState,
): Promise<{ reader: RepoReader; from: string } | { why: string }> {
  const source = setup.source;
  if (source.kind === 'none') return { why: 'no source to read it from (see source)' };
  if (source.kind === 'dir') return { reader: new DirectoryReader(source.root), from: `directory ${source.root}` };
  const rev = applied.kind === 'read' ? applied.revision : undefined;
  if (!rev) return { why: `not known yet: nothing was applied from Git with the state directory ${setup.stateDir}` };
  if (!isCommitId(rev.id))
    return { why: `not known: the revision applied last (${rev.id}) is no commit (a manual apply)` };
  let found: RepoReader | undefined;
  try {
    const { appliedCommitReader } = await import('./applied-commit-reader.js');
    found = await appliedCommitReader({
      repo: source.repo,
      commit: rev.id,
      branch: shortBranchRef(fullBranchRef(source.ref)),
      stateDir: setup.stateDir,
    });
  } catch {
    found = undefined;
  }
  if (!found)
    return {
      why: `not known: commit ${rev.id.slice(0, 12)}, applied last, is not in the agent's Git cache (or the repository) any more`,
    };
  return { reader: found, from: `commit ${rev.id.slice(0, 12)} (applied last)` };
}

export async function currentPlan(setup: DoctorSetup, applied: AppliedState): Promise<CurrentPlan> {
  const opened = await currentReader(setup, applied);
  if ('why' in opened) return { kind: 'unknown', why: opened.why };
  const { reader, from } = opened;
  let r: Awaited<ReturnType<typeof loadDeviceRevision>>;
  try {
    r = await loadDeviceRevision(reader, {
      ...(setup.planFile !== undefined && { plan: setup.planFile }),
      device: setup.device,
      labels: setup.labels,
    });
  } catch (e) {
    return {
      kind: 'invalid',
      why: `cannot read the plan from ${from}: ${(e as Error).message}`,
      fix: 'check that the source is readable by the agent',
      code: (e as { code?: string }).code,
    };
  }
  if (r.ok)
    return {
      kind: 'known',
      state: r.state,
      planFile: r.planFile,
      ...(r.target !== undefined && { target: r.target }),
      from,
    };
  // The same refusal, and fix, as the first-revision check gives a Git tip: a directory is its own first revision.
  const plans = setup.source.kind === 'dir' ? directoryPlans(setup.source.root) : async () => [];
  const refusal = await refusalOf(r, setup, { from, plans });
  return {
    kind: 'invalid',
    why: refusal.why,
    fix: refusal.fix,
    ...(refusal.code !== undefined && { code: refusal.code }),
  };
}

/** The `plan` line. */
export function checkPlan(plan: CurrentPlan, setup: DoctorSetup): CheckResult {
  if (plan.kind === 'unknown') return skip('plan', plan.why);
  if (plan.kind === 'invalid') return fail('plan', plan.why, plan.fix, plan.code);
  const chosen = setup.planFile !== undefined ? '--plan' : `fleet.toml target ${plan.target ?? '?'}`;
  const cs = plan.state.components;
  const containers = cs.filter((c) => c.recipe.lifecycle.run.type === 'container').length;
  const kinds = [
    cs.length - containers && `${cs.length - containers} process${cs.length - containers === 1 ? '' : 'es'}`,
    containers && `${containers} container${containers === 1 ? '' : 's'}`,
  ]
    .filter(Boolean)
    .join(', ');
  return pass(
    'plan',
    `${plan.planFile} (${chosen}) from ${plan.from}: ${cs.length} component${cs.length === 1 ? '' : 's'}${kinds ? ` (${kinds})` : ''}`,
  );
}
