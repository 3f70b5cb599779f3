// What happens to a new revision, in order (SPEC §7): 1 verify → 2 target and load → 3 device check → 4 standing and
// gate → 5 apply (or resume; apply-candidate.ts). Each step either passes the revision on or ends it with an outcome value; outcomes.ts
// writes what the outcome means (rows, events, reports), so this file decides and never records.
import { formatDiagnostic } from '../core/errors.js';
import { FLEET_FILE } from '../core/fleet.js';
import type { Revision } from '../source/directory-source.js';
import { loadDeviceRevision } from '../load/load-fleet.js';
import { TrustError } from '../trust/trust-error.js';
import { VerifiedReader, verifyRevision } from '../trust/verify-revision.js';
import { reportAdmission } from './report-admission.js';
import { IdentityError } from '../identity/identity-error.js';
import { openRevisionSecrets } from './revision-secrets.js';
import { waitedFor } from './device-waits.js';
import { applyCandidate } from './apply-candidate.js';
import type { RevisionOutcome, RevisionSteps } from './revision-steps.js';
import { isoTime } from '../core/iso-time.js';

/** Refusals that depend on the device's clock (docs/signing.md, "Time"): the same revision is looked at again later. */
const CLOCK_REFUSALS: ReadonlySet<string> = new Set(['KS_SIGNATURE_FROM_FUTURE', 'KS_SIGNATURE_TOO_OLD']);

/** The last placement logged ("this device in the fleet"), said again only when it changes. */
const placements = new WeakMap<RevisionSteps, string>();

export async function takeRevision(rev: Revision, s: RevisionSteps): Promise<RevisionOutcome> {
  const { store, log, now } = s;
  log.info({ revision: rev.id, source: rev.source }, 'new revision');
  const began = now();
  // A newer revision supersedes one whose agent version waits for a probation: its status no longer names that one.
  s.agentUpdate?.takenUp(rev.id);
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
          `KS_SIGNATURE_REPLAYED: signed at ${isoTime(v.signedAt * 1000)}, not the signature of the revision this device runs under the same id (signed at ${isoTime(applied.signedAt! * 1000)})`,
        );
      reader = new VerifiedReader(rev.reader, v);
      signedAt = v.signedAt;
      signers = [...v.signers];
      log.info({ revision: rev.id, signers: v.signers, signed_at: isoTime(v.signedAt * 1000) }, 'signature verified');
      if (runs && maxAgeSeconds !== undefined && Math.floor(now() / 1000) - v.signedAt > maxAgeSeconds)
        log.warn(
          { revision: rev.id, code: 'KS_SIGNATURE_TOO_OLD', signed_at: isoTime(v.signedAt * 1000) },
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
