// Would the agent take the first revision it is offered? A Git device that applied nothing yet has no plan the `plan`
// check can read, yet its agent refuses the branch's tip at once when the tip does not verify with the device's trusted
// keys (unsigned, signed by a key it does not trust, older than --max-age: step 1 of agent/take-revision.ts, with the
// same verifyRevision and the same options), when there is no --plan and no fleet.toml, when no target of fleet.toml
// takes the device, or when --plan names a plan the repository does not have: doctor must not say ready then. The tip
// is read where doctor already reads Git (a local repository, from its files); a remote one is not fetched (doctor
// writes no cache), so there the check is skipped and says why. For --dir the revision is the directory as it is now:
// its signature is verified here, its plan is read by the `plan` check; the fix for a refusal is worked out here for both.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CODES, formatDiagnostic, type Diagnostic } from '../core/errors.js';
import { FLEET_FILE } from '../core/fleet.js';
import { formatLabels } from '../core/labels.js';
import { DirectoryReader } from '../source/directory-reader.js';
import { fullBranchRef, parseGitRepo, shortBranchRef } from '../git/git-repo-location.js';
import { loadDeviceRevision, type DeviceResolution } from '../load/load-fleet.js';
import { TrustError } from '../trust/trust-error.js';
import type { AppliedState } from './applied-state.js';
import { fail, pass, skip, warn, type CheckResult } from './check-result.js';
import type { DoctorSetup } from './doctor-setup.js';
import { verifyAsAgent } from './verify-as-agent.js';

/** Why the agent refuses a revision, as a doctor line says it: what was seen, its code, and what to do. */
export interface Refusal {
  why: string;
  fix: string;
  code?: string;
}

/** Where the revision was read and how to list its plans (for the fix of a missing plan). */
export interface RevisionPlace {
  /** `directory /srv/fleet`, `commit 3f2a1c0e9b12 (the tip of main)`. */
  from: string;
  /** The repository's `plans/*.toml`, repository-relative, sorted; [] when it has none. */
  plans: () => Promise<string[]>;
}

/**
 * The refusal of a revision that does not load for this device, with the fix for the cases a new user meets first:
 * no --plan and no fleet.toml, no target for this device, a --plan that does not exist. Other problems name their file
 * and TOML path and point at apply-dry.
 */
export async function refusalOf(
  r: Extract<DeviceResolution, { ok: false }> & { planFile?: string },
  setup: Pick<DoctorSetup, 'planFile' | 'device' | 'labels'>,
  place: RevisionPlace,
): Promise<Refusal> {
  const first: Diagnostic | undefined = r.diagnostics[0];
  const more = r.diagnostics.length > 1 ? ` (and ${r.diagnostics.length - 1} more)` : '';
  const plansText = async () => {
    const plans = await place.plans();
    return plans.length ? `its plans: ${plans.join(', ')}` : 'it has no plans/*.toml yet';
  };
  if (first?.code === CODES.FLEET_MISSING)
    return {
      why: `${place.from} has no ${FLEET_FILE} and no --plan is given: the agent refuses every revision until one picks the plan`,
      fix: `give --plan PLAN (${await plansText()}), or add ${FLEET_FILE} with [[targets]] that select this device (docs/fleets.md)`,
      code: first.code,
    };
  if (r.noTarget)
    return {
      why: `no target of ${FLEET_FILE} in ${place.from} takes device ${setup.device} (${formatLabels(setup.labels)})`,
      fix: `give --device NAME or --label KEY=VALUE values a target selects (${first?.hint ?? `see ${FLEET_FILE}`}), add a target for this device to ${FLEET_FILE}, or give --plan PLAN`,
      ...(first && { code: first.code }),
    };
  const plan = setup.planFile;
  if (plan !== undefined && first?.code === CODES.FILE_NOT_FOUND && first.file === plan && first.path === '')
    return {
      why: `--plan ${plan} does not exist in ${place.from}`,
      fix: `give --plan one of the repository's plans (${await plansText()}), or leave --plan out to take the plan from ${FLEET_FILE}`,
      code: first.code,
    };
  return {
    why: `${r.planFile ?? FLEET_FILE} from ${place.from} does not load: ${first ? formatDiagnostic(first) : 'invalid'}${more}`,
    fix: 'correct the files named (keystonectl apply-dry shows every error of a plan, --fleet of every target)',
    ...(first && { code: first.code }),
  };
}

/** The `plans/*.toml` of a directory, repository-relative. */
export function directoryPlans(root: string): () => Promise<string[]> {
  return async () => {
    try {
      return readdirSync(join(root, 'plans'), { withFileTypes: true })
        .filter((e) => e.isFile() && e.name.endsWith('.toml'))
        .map((e) => `plans/${e.name}`)
        .sort();
    } catch {
      return [];
    }
  };
}

/**
 * The `first-revision` line. `applied`: what the state store says was applied last (doctor reads it once); `now`: the
 * device's clock (ms), which the signature's age and time are judged by, as the agent judges them.
 */
export async function checkFirstRevision(
  setup: DoctorSetup,
  applied: AppliedState,
  sourceUsable: boolean,
  now: number,
): Promise<CheckResult> {
  const source = setup.source;
  if (!sourceUsable || source.kind === 'none') return skip('first-revision', 'no usable source (see source)');
  const appliedId = applied.kind === 'read' ? applied.revision?.id : undefined;
  if (source.kind === 'dir') return checkDirectory(setup, source.root, applied, now);
  let location;
  try {
    location = parseGitRepo(source.repo);
  } catch {
    return skip('first-revision', 'no usable source (see source)');
  }
  const ref = fullBranchRef(source.ref);
  const branch = shortBranchRef(ref);
  if (location.kind !== 'local')
    return skip(
      'first-revision',
      `not read: doctor does not fetch from ${source.repo} (it writes no Git cache), so the tip of ${branch} is first read by the agent; in a checkout of it, keystonectl apply-dry --fleet shows what each target would run`,
    );
  // isomorphic-git only for a Git source, as in the agent.
  const { GitTreeReader } = await import('../source/git-tree-reader.js');
  let tipReader: InstanceType<typeof GitTreeReader>;
  try {
    tipReader = await GitTreeReader.open(location.path, ref);
  } catch (e) {
    return skip('first-revision', `not read: ${(e as Error).message} (see git-remote)`);
  }
  const tip = tipReader.commit;
  const from = `commit ${tip.slice(0, 12)} (the tip of ${branch})`;
  if (appliedId === tip) return skip('first-revision', `${from} is the commit applied last: see plan`);
  const sign = `keystonectl sign --key KEY --ref ${branch} in a checkout of ${branch}, then commit and push`;
  const refused = (e: TrustError) => trustRefusal(e, from, appliedId, sign);
  // 1. Verify, as the agent does before any TOML is parsed.
  const verified = await verifyAsAgent(setup, tipReader, { id: tip, ref }, applied, now);
  if (verified.kind === 'refused') return refused(verified.error);
  if (verified.kind === 'no-keyring')
    return skip(
      'first-revision',
      `${from} not verified: the agent has no trusted keys it could verify it with (see trusted-keys)`,
    );
  // 2. Target and load, through the verified reader: a file the signature does not cover is refused there.
  let r: Awaited<ReturnType<typeof loadDeviceRevision>>;
  try {
    r = await loadDeviceRevision(verified.reader, {
      ...(setup.planFile !== undefined && { plan: setup.planFile }),
      device: setup.device,
      labels: setup.labels,
    });
  } catch (e) {
    if (e instanceof TrustError) return refused(e);
    return fail(
      'first-revision',
      `cannot read ${from}: ${(e as Error).message}`,
      `check that ${location.path} is readable by the agent's user`,
      (e as { code?: string }).code,
    );
  }
  if (r.ok) {
    const chosen = setup.planFile !== undefined ? '--plan' : `${FLEET_FILE} target ${r.target ?? '?'}`;
    const named = verified.said ? `${from}, ${verified.said},` : from;
    return pass(
      'first-revision',
      `${named} loads for device ${setup.device}: ${r.planFile} (${chosen}), ${r.state.components.length} component${r.state.components.length === 1 ? '' : 's'}`,
    );
  }
  const refusal = await refusalOf(r, setup, { from, plans: gitPlans(location.path, tip) });
  return refusedWith(refusal, appliedId);
}

/** --dir: the directory as it is now is the revision the agent takes first; its plan is the `plan` check's. */
async function checkDirectory(
  setup: DoctorSetup,
  root: string,
  applied: AppliedState,
  now: number,
): Promise<CheckResult> {
  const seePlan =
    'the revision the agent takes first is the directory as it is now, which the plan check reads (see plan)';
  if (setup.trust.unsigned) return skip('first-revision', `--dir: ${seePlan}`);
  const from = `directory ${root}`;
  const appliedId = applied.kind === 'read' ? applied.revision?.id : undefined;
  const { directoryRevisionId } = await import('../source/directory-source.js');
  const reader = new DirectoryReader(root);
  const verified = await verifyAsAgent(setup, reader, { id: await directoryRevisionId(root) }, applied, now);
  const refused = (e: TrustError) => trustRefusal(e, from, appliedId, `keystonectl sign --key KEY --repo ${root}`);
  if (verified.kind === 'refused') return refused(verified.error);
  if (verified.kind === 'no-keyring')
    return skip(
      'first-revision',
      `${from} not verified: the agent has no trusted keys it could verify it with (see trusted-keys)`,
    );
  // A plan or recipe the signature does not cover is refused while loading; any other problem is the plan check's.
  try {
    await loadDeviceRevision(verified.reader, {
      ...(setup.planFile !== undefined && { plan: setup.planFile }),
      device: setup.device,
      labels: setup.labels,
    });
  } catch (e) {
    if (e instanceof TrustError) return refused(e);
  }
  return pass('first-revision', `${from}: ${verified.said}; ${seePlan}`);
}

/** The agent refuses the revision for its signature: what it says, and what to do (`sign`: how to sign it there). */
function trustRefusal(e: TrustError, from: string, appliedId: string | undefined, sign: string): CheckResult {
  return refusedWith(
    { why: `${from} is refused for its signature: ${e.message}`, fix: trustFix(e, sign), code: e.code },
    appliedId,
  );
}

/** A refusal fails a device that runs nothing yet; one that runs something keeps running it (a warning). */
function refusedWith(refusal: Refusal, appliedId: string | undefined): CheckResult {
  // A device that runs something keeps running it when the next revision is refused: worth knowing, not a failure.
  if (appliedId !== undefined)
    return warn(
      'first-revision',
      `the agent would refuse the next revision and keep running ${appliedId.slice(0, 12)}: ${refusal.why}${refusal.code ? ` [${refusal.code}]` : ''}`,
      refusal.fix,
    );
  return fail('first-revision', refusal.why, refusal.fix, refusal.code);
}

/** What to do about each refusal of the signature check (docs/signing.md has the table of codes). */
function trustFix(e: TrustError, sign: string): string {
  const verify = 'keystonectl verify --trusted-key FILE… in a checkout shows the same refusal';
  switch (e.code) {
    case 'KS_UNSIGNED':
      return `sign it: ${sign} (docs/signing.md); or, for development only, --allow-unsigned`;
    case 'KS_UNTRUSTED_KEY':
      return `the key is not trusted: give its public key with --trusted-key FILE (trusted-key in the configuration), or sign with a key the device trusts: ${sign}`;
    case 'KS_THRESHOLD_NOT_MET':
      return `have more of the trusted keys sign it (keystonectl sign --append), or lower --threshold; ${verify}`;
    case 'KS_SIGNATURE_TOO_OLD':
      return `sign it again: ${sign}; or give --max-age a longer duration (and check this device's clock: see clock)`;
    case 'KS_SIGNATURE_FROM_FUTURE':
      return "set this device's clock (NTP, or date -s) if it is behind; else sign again with a correct clock";
    case 'KS_SIGNATURE_REPLAYED':
      return `it is signed earlier than the revision this device applied last: sign it again (${sign}); if this device's floor is wrong, keystone floor shows it`;
    case 'KS_SIGNATURE_NO_REF':
    case 'KS_SIGNATURE_WRONG_REF':
      return `sign it for the ref the device follows: ${sign}`;
    case 'KS_DIGEST_MISMATCH':
    case 'KS_SIGNED_FILE_MISSING':
    case 'KS_FILE_NOT_SIGNED':
      return `a file changed after signing: review the change and sign again: ${sign}; ${verify}`;
    default:
      return `sign it again with a trusted key: ${sign}; ${verify}`;
  }
}

/** The `plans/*.toml` of a commit: its plans/ tree, read from the repository's files. */
function gitPlans(repoPath: string, commit: string): () => Promise<string[]> {
  return async () => {
    try {
      const fs = await import('node:fs');
      const { default: git } = await import('isomorphic-git');
      const { locateGitRepository } = await import('../source/git-tree-reader.js');
      const { tree } = await git.readTree({
        fs,
        gitdir: locateGitRepository(repoPath).gitdir,
        oid: commit,
        filepath: 'plans',
      });
      return tree
        .filter((e) => e.type === 'blob' && e.path.endsWith('.toml'))
        .map((e) => `plans/${e.path}`)
        .sort();
    } catch {
      return [];
    }
  };
}
