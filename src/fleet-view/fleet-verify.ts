// The fleet view's check of every report it shows (SPEC §15), as the devices' gates check theirs: a note entry or a
// rollout ref counts when it verifies against its device's certificate — devices/<name>.cert at the commit viewed,
// else the one the device publishes beside its reports (note-commit.ts) — under the enrolment keys given
// (`--enrollment-key`), minus devices/revoked.toml at the commit. The gates read certificates from the commit only:
// a report verified by a published certificate alone is said so, since no gate counts it.
import * as fs from 'node:fs';
import git, { Errors } from 'isomorphic-git';
import { certificatePath, CERTIFICATE_DIR } from '../identity/certificate.js';
import { counts, ReportVerifier, type Verification } from '../identity/report-verifier.js';
import { noteMessage, rolloutMessage } from '../identity/report-signature.js';
import { parseRevocations, REVOCATIONS_FILE, revokedReason, type Revocations } from '../identity/revocations.js';
import { vouched } from '../identity/vouched-wave.js';
import type { Rollout } from '../core/rollout.js';
import { IdentityError } from '../identity/identity-error.js';
import type { PublicKey } from '../trust/minisign.js';
import type { DeviceReport, DeviceReports } from './fleet-view-input.js';
import type { RolloutRef } from '../report/rollout-refs.js';

/** How a certificate found only in a device's notes is named: the gates never read those. */
const PUBLISHED = 'the certificate';

export interface FleetVerifyOptions {
  /** The repository and commit viewed: devices/ and revoked.toml are read there. */
  gitdir: string;
  commit: string;
  enrollmentKeys: readonly PublicKey[];
  /** fleet.toml's `[rollout]`, if the commit has one: its require_enrolled, and its waves (a selector wave admits an
   * enrolled device by its certificate's labels, as the gates do). */
  rollout?: Pick<Rollout, 'waves' | 'requireEnrolled'>;
  now: number;
}

export interface FleetVerification {
  requireEnrolled: boolean;
  /** What the reader should know about this check (an unreadable revoked.toml, no devices/ at the commit). */
  warnings: string[];
  /** The rollout refs that count: what the gates count. */
  countedRefs: RolloutRef[];
  /** Those that do not, with why. */
  refusedRefs: Array<{ ref: RolloutRef; verification: Verification }>;
}

/** Sets `verification` and `counted` on every report of `reports` (in place), and sorts `refs` into counted or not. */
export async function verifyFleetReports(
  reports: readonly DeviceReports[],
  refs: readonly RolloutRef[],
  o: FleetVerifyOptions,
): Promise<FleetVerification> {
  const warnings: string[] = [];
  let revocations: Revocations | undefined;
  try {
    revocations = await readRevocations(o.gitdir, o.commit);
  } catch (e) {
    // The devices refuse this commit (a revoked.toml that does not parse revokes nothing they can tell); the view
    // still shows the fleet, and says so.
    if (!(e instanceof IdentityError)) throw e;
    warnings.push(`${e.message}: the devices refuse this commit; no revocation is applied in this view`);
  }
  const hasDevices = (await treeEntryType(o.gitdir, o.commit, CERTIFICATE_DIR)) === 'tree';
  // As the gates decide it (report-admission.ts): a reader holding an enrolment key requires enrolment unless the
  // signed fleet.toml says otherwise; devices/ is not signed, and a commit without it must not turn checks off.
  const requireEnrolled = o.rollout?.requireEnrolled ?? (o.enrollmentKeys.length > 0 || hasDevices);
  if (o.enrollmentKeys.length > 0 && !hasDevices)
    warnings.push(`no ${CERTIFICATE_DIR}/ at this commit: no device is enrolled in it, so no report verifies`);
  const published = new Map(
    reports.flatMap((r) => (r.publishedCertificate !== undefined ? [[r.device, r.publishedCertificate] as const] : [])),
  );
  const verifier = new ReportVerifier({
    enrollmentKeys: o.enrollmentKeys,
    now: () => o.now,
    ...(revocations && { revoked: (c) => revokedReason(revocations, c) }),
    certificateOf: async (device) => {
      const file = certificatePath(device);
      const text = file === undefined ? undefined : await readText(o.gitdir, o.commit, file);
      if (text !== undefined) return { text, file: file! };
      const own = await published.get(device)?.();
      return own === undefined
        ? undefined
        : { text: own, file: `${PUBLISHED} ${device} publishes (not in devices/: no gate counts it)` };
    },
  });
  const check = async (device: string, r: DeviceReport | undefined) => {
    if (!r || r.verification) return;
    r.verification = await verifier.check(device, noteMessage(r.commit, r.signed ?? []), r.signature, r.at);
    r.counted = counts(r.verification, requireEnrolled);
  };
  for (const r of reports) {
    await check(r.device, r.onCommit);
    await check(r.device, r.newest);
  }
  const countedRefs: RolloutRef[] = [];
  const refusedRefs: FleetVerification['refusedRefs'] = [];
  for (const ref of refs) {
    const checked = await verifier.check(ref.device, rolloutMessage(ref), ref.signature);
    const v = o.rollout ? vouched(o.rollout, ref, checked) : checked;
    // A published certificate is no gate's: the ref counts only as a gate would count it.
    const gateCounts = counts(v, requireEnrolled) && !(v.certificate ?? '').startsWith(PUBLISHED);
    if (gateCounts) countedRefs.push(ref);
    else refusedRefs.push({ ref, verification: v });
  }
  return { requireEnrolled, warnings, countedRefs, refusedRefs };
}

async function readRevocations(gitdir: string, commit: string): Promise<Revocations | undefined> {
  const text = await readText(gitdir, commit, REVOCATIONS_FILE);
  return text === undefined ? undefined : parseRevocations(text, REVOCATIONS_FILE);
}

async function treeEntryType(gitdir: string, commit: string, path: string): Promise<string | undefined> {
  const { tree } = (await git.readCommit({ fs, gitdir, oid: commit })).commit;
  return (await git.readTree({ fs, gitdir, oid: tree })).tree.find((e) => e.path === path)?.type;
}

async function readText(gitdir: string, commit: string, filepath: string): Promise<string | undefined> {
  try {
    const { blob } = await git.readBlob({ fs, gitdir, oid: commit, filepath });
    return blob.length <= 1024 * 1024 ? Buffer.from(blob).toString('utf8') : undefined;
  } catch (e) {
    if (e instanceof Errors.NotFoundError || e instanceof Errors.ObjectTypeError) return undefined;
    throw e;
  }
}
