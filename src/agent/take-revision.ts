// What happens to a new revision, in order (SPEC §7): 1 verify → 2 target and load → 3 device check → 4 standing and
// gate → 5 apply (or resume). Each step either passes the revision on or ends it with an outcome value; outcomes.ts
// writes what the outcome means (rows, events, reports), so this file decides and never records.
import type { DesiredState } from '../core/desired-state.js';
import type { Reconcile } from '../core/diff.js';
import { formatDiagnostic } from '../core/errors.js';
import { FLEET_FILE } from '../core/fleet.js';
import type { Labels } from '../core/labels.js';
import type { Logger } from '../log/logger.js';
import type { Revision } from '../source/directory-source.js';
import { loadDeviceRevision } from '../load/load-fleet.js';
import type { RepoReader } from '../source/repo-reader.js';
import type { StateStore } from '../store/state-store.js';
import { TrustError } from '../trust/trust-error.js';
import { VerifiedReader, verifyRevision } from '../trust/verify-revision.js';
import type { Engine } from './engine.js';
import type { Outcomes } from './outcomes.js';
import { stateDigest } from './rollout-gate.js';
import type { Candidate, RolloutHolds } from './rollout-holds.js';
import { reportAdmission } from './report-admission.js';
import { IdentityError } from '../identity/identity-error.js';
import type { PublicKey } from '../trust/minisign.js';
import type { DeviceProblem, TrustSetting } from './agent-types.js';
import { openRevisionSecrets, type SecretSteps } from './revision-secrets.js';
import type { AgentUpdater } from '../agent-update/agent-updater.js';
import { downloadsAndWindow, lockOptions, waitedFor, waitForLocks } from './device-waits.js';
import { agentUpdateStep, type UpdateSteps } from './agent-update-step.js';

/** Refusals that depend on the device's clock (docs/signing.md, "Time"): the same revision is looked at again later. */
const CLOCK_REFUSALS: ReadonlySet<string> = new Set(['KS_SIGNATURE_FROM_FUTURE', 'KS_SIGNATURE_TOO_OLD']);

/** What became of a revision the loop took up. */
export type RevisionOutcome =
  /** `passing`: refused for a reason that passes (the clock, the disk): the loop tries it again later. */
  | { kind: 'rejected'; reason: string; passing: boolean }
  | { kind: 'held' }
  | { kind: 'failed-before' }
  /** The commit the device runs, carried out in this run already. */
  | { kind: 'current' }
  | { kind: 'applied'; outcome: 'success' | 'failure' | 'interrupted' }
  | { kind: 'resumed'; outcome: 'success' | 'failure' }
  /** The agent switched to the version the revision asks for and is being restarted into it (SPEC §17). */
  | { kind: 'handover' }
  /** Not taken up now (another agent version while this one is on probation): the loop offers it again later. */
  | { kind: 'deferred'; reason: string }
  /** A component it would stop holds its update lock (SPEC §19): nothing applied; taken up again at the release. */
  | { kind: 'waiting'; reason: string };

export interface RevisionSteps extends UpdateSteps {
  trust: TrustSetting;
  /** `--plan`; without it fleet.toml picks the plan by the device's name and labels. */
  planFile?: string;
  fleet: { device: string; labels: Labels };
  /** What the plan was chosen with (device-identity.ts). */
  identity: string;
  following: 'git' | 'directory';
  check?: (state: DesiredState) => DeviceProblem[] | Promise<DeviceProblem[]>;
  useReader?: (reader: RepoReader) => void;
  store: StateStore;
  engine: Engine;
  outcomes: Outcomes;
  holds: RolloutHolds;
  log: Logger;
  now: () => number;
  /** The enrolment keys this device trusts (`--enrollment-key`): its gate counts only reports that verify (SPEC §15). */
  enrollmentKeys?: readonly PublicKey[];
  /** How this device opens the secrets a plan reads (SPEC §16); without it a plan that reads one is refused. */
  secrets?: SecretSteps;
  /** How this agent updates itself to the version a revision's [agent] names (SPEC §17); without it, it does not. */
  agentUpdate?: AgentUpdater;
}

/** The last placement logged ("this device in the fleet"), said again only when it changes. */
const placements = new WeakMap<RevisionSteps, string>();

export async function takeRevision(rev: Revision, s: RevisionSteps): Promise<RevisionOutcome> {
  const { store, log, now } = s;
  log.info({ revision: rev.id, source: rev.source }, 'new revision');
  const began = now();
  // A manual apply names its plan; else --plan; else fleet.toml picks one by this device's name and labels.
  const explicitPlan = rev.planFile ?? s.planFile;
  let planFile = explicitPlan ?? FLEET_FILE;
  let target: string | undefined;
  /** The device's rollout wave, once the plan is resolved: a refusal on the device then counts towards a halt. */
  let waveName: string | undefined;
  const reject = (reason: string, passing = false): RevisionOutcome => {
    // Written, then said: whoever reads the log line finds the history agreeing with it.
    s.outcomes.rejected({
      revision: rev.id,
      planFile,
      ...(target !== undefined && { target }),
      ...(waveName !== undefined && { wave: waveName }),
      reason,
      began,
      silent: rev.rollback === true,
    });
    log.error({ revision: rev.id, reason }, 'revision refused; still running the previous one');
    return { kind: 'rejected', reason, passing };
  };

  // 1. Verify: the signatures over SHA256SUMS, before any TOML is parsed.
  let reader = rev.reader;
  let signedAt: number | undefined;
  let signers: string[] | undefined;
  if (s.trust.unsigned)
    log.warn(
      { revision: rev.id },
      'UNSIGNED revision: signatures are not checked (--allow-unsigned, development only)',
    );
  else {
    // What this device already runs passed --max-age and the replay floor when it was applied. Offered again (the
    // agent restarted, its clock now a year ahead, or the state frozen; or a rollback's target, below a floor its
    // failed successor raised) it is loaded again rather than refused, so that what runs stays supervised; it is said
    // loudly. "The same" is the same id and the very signature time recorded when it was applied: a directory's or a
    // manual apply's id is a short hash that someone able to write files could make collide with another signed set.
    const applied = store.appliedRevision();
    const runs = rev.id === applied?.id && applied.signedAt !== undefined;
    const { keyring, maxAgeSeconds, maxClockSkewSeconds, requireRef } = s.trust;
    const floor = runs ? applied.signedAt : store.lastSignedAt();
    try {
      const v = await verifyRevision(rev.reader, {
        keyring,
        now: Math.floor(now() / 1000),
        // A rollback re-applies a revision this device already applied and saw succeed: the floor it raised since
        // is its own doing, not a replay by someone else.
        ...(floor !== undefined && !rev.rollback && { notBefore: floor }),
        // A revision that passed --max-age when taken up and has waited since (a lock, a window) is not refused for
        // the wait: it is the same signed revision, taken up again.
        ...(maxAgeSeconds !== undefined && !runs && !waitedFor(s, rev.id) && { maxAgeSeconds }),
        ...(maxClockSkewSeconds !== undefined && { maxClockSkewSeconds }),
        ...(rev.ref !== undefined && { ref: rev.ref }),
        ...(requireRef === true && !runs && { requireRef }),
      });
      if (runs && v.signedAt !== applied.signedAt)
        return reject(
          `KS_SIGNATURE_REPLAYED: signed at ${new Date(v.signedAt * 1000).toISOString()}, not the signature of the revision this device runs under the same id (signed at ${new Date(applied.signedAt! * 1000).toISOString()})`,
        );
      reader = new VerifiedReader(rev.reader, v);
      signedAt = v.signedAt;
      signers = [...v.signers];
      log.info(
        { revision: rev.id, signers: v.signers, signed_at: new Date(v.signedAt * 1000).toISOString() },
        'signature verified',
      );
      if (runs && maxAgeSeconds !== undefined && Math.floor(now() / 1000) - v.signedAt > maxAgeSeconds)
        log.warn(
          { revision: rev.id, code: 'KS_SIGNATURE_TOO_OLD', signed_at: new Date(v.signedAt * 1000).toISOString() },
          'the revision this device runs is older than --max-age: it keeps running, supervised; only a newer signed revision replaces it (or check the clock)',
        );
    } catch (e) {
      if (!(e instanceof TrustError)) throw e;
      // Refused by this device's clock rather than by the signature: once the clock is right (NTP, date -s) it may pass.
      return reject(`${e.code}: ${e.message}`, CLOCK_REFUSALS.has(e.code));
    }
  }

  // 2. Target and load: the plan for this device (fleet.toml's target, or the named plan), validated and resolved.
  let resolution;
  try {
    resolution = await loadDeviceRevision(reader, {
      ...(explicitPlan !== undefined && { plan: explicitPlan }),
      ...s.fleet,
    });
  } catch (e) {
    if (e instanceof TrustError) return reject(`${e.code}: ${e.message}`);
    throw e;
  }
  if (resolution.ok) {
    ({ planFile, target } = resolution);
    // Only a staged commit followed from Git has a wave: its refusal here is this device's `error` in the rollout.
    if (resolution.rollout && rev.origin === 'commit' && !rev.rollback && s.following === 'git')
      waveName = resolution.wave?.name;
    if (target !== undefined) logPlacement(s, rev.id, target, planFile, resolution.wave?.name);
  } else if (resolution.noTarget) {
    // A valid revision with no place for this device: it keeps what runs, and says so with its labels.
    const d = resolution.diagnostics[0]!;
    log.error({ revision: rev.id, code: d.code, device: s.fleet.device, labels: s.fleet.labels }, formatDiagnostic(d));
    return reject(`${d.message} [${d.code}]`);
  } else {
    for (const d of resolution.diagnostics) log.error({ revision: rev.id, code: d.code }, formatDiagnostic(d));
    return reject(
      `invalid: ${resolution.diagnostics.length} error(s), first: ${formatDiagnostic(resolution.diagnostics[0]!)}`,
    );
  }

  // 2b. Secrets: opened with this device's keys, through the signed reader (a swapped ciphertext is refused there).
  const opened = await openRevisionSecrets(reader, resolution.state, { target, ...s.fleet, secrets: s.secrets });
  if (!opened.ok) return reject(opened.reason);
  resolution = { ...resolution, state: opened.state };

  // 3. Device check: what only this device can tell (container permissions, mount sources on this host).
  const problems = (await s.check?.(resolution.state)) ?? [];
  if (problems.length) {
    for (const p of problems)
      log.error({ revision: rev.id, component: p.component, code: p.code }, `${p.file}: ${p.path}: ${p.message}`);
    const first = problems[0]!;
    return reject(
      `refused on this device: ${problems.length} problem(s), first: ${first.file}: ${first.path}: ${first.message} [${first.code}]`,
    );
  }

  // 4. Standing and gate. A commit that failed here is not tried again by a restart (outcomes.ts, rule 2).
  const standing = s.outcomes.standing(rev, { identity: s.identity, loaded: s.engine.loaded === rev.id });
  if (standing.kind === 'current') {
    log.info({ revision: rev.id }, 'the revision this device runs: nothing to do');
    return { kind: 'current' };
  }
  if (standing.kind === 'failed-before') {
    log.warn(
      { revision: rev.id, outcome: 'failure', summary: standing.summary },
      'failed on this device before: not applied again, its outcome stands; a new commit (a fix, or git revert) changes what runs',
    );
    return { kind: 'failed-before' };
  }
  // The revision this device runs (offered again after a restart) is not gated again: its own report stands (a
  // failed canary must stay a failure in the rollout, not turn into `halted` by its own failure).
  const current = standing.kind === 'resume' || standing.kind === 'continue';
  const c = {
    rev,
    state: resolution.state,
    planFile,
    ...(target !== undefined && { target }),
    ...(signedAt !== undefined && { signedAt }),
    ...(signers !== undefined && { signers }),
    ...(resolution.agent && { agent: resolution.agent }),
    ...(resolution.window && { window: resolution.window }),
    began,
  };
  // The commit a new agent version was switched to for (SPEC §17) passed its gate before the switch: not gated again,
  // its deadline runs.
  const proving = s.agentUpdate?.trialCommit() === rev.id;
  if (resolution.rollout && resolution.wave && waveName !== undefined && !current && !proving) {
    // Staged (SPEC §14): held until its gate opens. A newer commit goes first in line; the same one offered again
    // (a restart, a rollback target become the tip) replaces its entry.
    let admission;
    try {
      admission = await reportAdmission({
        raw: rev.reader,
        signed: reader,
        rollout: resolution.rollout,
        enrollmentKeys: s.enrollmentKeys ?? [],
        now,
      });
    } catch (e) {
      // A devices/revoked.toml that does not parse revokes nothing anyone can tell: the commit is refused (fails closed).
      if (e instanceof IdentityError || e instanceof TrustError) return reject(`${e.code}: ${e.message}`);
      throw e;
    }
    if (s.enrollmentKeys?.length && !admission.hasDevices)
      log.warn(
        { revision: rev.id, code: 'KS_NO_DEVICES_DIR' },
        'this commit has no devices/ directory: no device is enrolled in it, so no report verifies and the commit stays held (unless its signed fleet.toml sets require_enrolled = false)',
      );
    if (admission.requireEnrolled && !s.enrollmentKeys?.length)
      log.warn(
        { revision: rev.id, code: 'KS_NO_ENROLLMENT_KEY' },
        'this fleet counts only reports of enrolled devices, and this device has no --enrollment-key to verify them with: the commit stays held',
      );
    // A newer commit in line at the gate: an older one waiting for a lock or its window is behind it now (retaken, it
    // would go before it in the holds and drop it).
    s.lockWait?.forget(rev.id);
    s.windowWait?.forget(rev.id);
    const installsAgent = s.agentUpdate?.installs(c.agent) === true;
    await s.holds.hold({
      ...c,
      ...(installsAgent && { installsAgent }),
      rollout: resolution.rollout,
      wave: resolution.wave.index,
      waveName: resolution.wave.name,
      admission,
    });
    return { kind: 'held' };
  }
  // A newer commit applied without the gate: what is held is behind it (a rollback is older, and keeps them).
  if (rev.origin === 'commit' && !rev.rollback && !current && !proving) s.holds.drop();

  // 5. Apply.
  return applyCandidate({ ...c, ...(waveName !== undefined && { waveName }) }, s);
}

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

function logPlacement(
  s: RevisionSteps,
  revision: string,
  target: string,
  planFile: string,
  wave: string | undefined,
): void {
  const { device } = s.fleet;
  const placement = `device=${device} target=${target}${wave !== undefined ? ` wave=${wave}` : ''}`;
  // Once per agent and whenever it changes: where this device stands in the fleet (SPEC §13–14).
  if (placement !== placements.get(s))
    s.log.info({ device, target, ...(wave !== undefined && { wave }) }, 'this device in the fleet');
  placements.set(s, placement);
  s.log.info({ revision, device, target, ...(wave !== undefined && { wave }), plan: planFile }, 'fleet target');
}
