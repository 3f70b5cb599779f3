// Which of the fleet's rollout reports a device's gate counts for one held commit (SPEC §14, §15): those that verify
// against the reporting device's certificate in that commit's devices/, under the enrolment keys this device trusts,
// minus what that commit's devices/revoked.toml revokes. A forged, revoked or (when the fleet requires enrolment)
// unverified report is as if it had not been pushed: it opens nothing and halts nothing.
//
// Certificates are read from the commit's own tree, one file per device the read met (never a list of the fleet);
// revoked.toml through the verified reader, since it is signed with the recipes. require_enrolled, when the signed
// fleet.toml does not say: true on a device that trusts an enrolment key (devices/ is not signed: whoever can push a
// commit without it must not turn verification off, issue 29 review), else true once the commit has devices/.
//
// A selector wave admits a device by its labels, which a device states itself: an enrolled device's report counts
// there only when its certificate vouches for the labels the wave selects (or the wave names it), so one device
// cannot report a success in the canary's wave by saying it is a canary.
import type { Rollout } from '../core/rollout.js';
import { IdentityError } from '../identity/identity-error.js';
import { counts, ReportVerifier, type Verification } from '../identity/report-verifier.js';
import { parseRevocations, REVOCATIONS_FILE, revokedReason } from '../identity/revocations.js';
import { CERTIFICATE_DIR, certificatePath } from '../identity/certificate.js';
import { rolloutMessage } from '../identity/report-signature.js';
import { vouched } from '../identity/vouched-wave.js';
import type { RepoReader } from '../source/repo-reader.js';
import type { RolloutRef } from '../report/rollout-refs.js';
import type { PublicKey } from '../trust/minisign.js';
import { MAX_CERTIFICATE_FILE_BYTES } from './run-settings.js';

const MAX_REVOKED_BYTES = 1024 * 1024;

export interface ReportAdmission {
  requireEnrolled: boolean;
  /** The commit has a devices/ directory. */
  hasDevices: boolean;
  /** The reports that count, and the others with why not. */
  admit(
    reports: readonly RolloutRef[],
  ): Promise<{ counted: RolloutRef[]; refused: Array<{ report: RolloutRef; verification: Verification }> }>;
}

export interface ReportAdmissionOptions {
  /** The commit as read from Git: certificates are not in SHA256SUMS (each authenticates itself). */
  raw: RepoReader;
  /** The commit through its signature: devices/revoked.toml must be signed. */
  signed: RepoReader;
  rollout: Rollout;
  enrollmentKeys: readonly PublicKey[];
  now: () => number;
}

export async function reportAdmission(o: ReportAdmissionOptions): Promise<ReportAdmission> {
  const dir = await o.raw.readFile(CERTIFICATE_DIR, 0);
  const hasDevices = !dir.ok && dir.code === 'KS_NOT_A_FILE';
  const requireEnrolled = o.rollout.requireEnrolled ?? (o.enrollmentKeys.length > 0 || hasDevices);
  const revokedText = await o.signed.readFile(REVOCATIONS_FILE, MAX_REVOKED_BYTES);
  // Fails closed: a revocation list that is there but cannot be read (too large, not a file) revokes nothing we can
  // tell, so the commit is refused rather than read as revoking no one.
  if (!revokedText.ok && revokedText.code !== 'KS_FILE_NOT_FOUND')
    throw new IdentityError('KS_REVOCATIONS_INVALID', `${REVOCATIONS_FILE}: ${revokedText.message}`, REVOCATIONS_FILE);
  const revocations = revokedText.ok
    ? parseRevocations(new TextDecoder().decode(revokedText.bytes), REVOCATIONS_FILE)
    : undefined;
  const decoder = new TextDecoder();
  // One cache for the certificate reads of one admit(): a Git reader parses its pack once for all of them, and lets it
  // go after (a pack kept for as long as a commit is held would be megabytes of a small board's memory).
  let batch: object | undefined;
  const verifier = new ReportVerifier({
    enrollmentKeys: o.enrollmentKeys,
    now: o.now,
    ...(revocations && { revoked: (c) => revokedReason(revocations, c) }),
    certificateOf: async (device) => {
      const file = certificatePath(device);
      if (file === undefined) return undefined;
      const read = await o.raw.readFile(file, MAX_CERTIFICATE_FILE_BYTES, batch && { cache: batch });
      return read.ok ? { text: decoder.decode(read.bytes), file } : undefined;
    },
  });
  return {
    requireEnrolled,
    hasDevices,
    async admit(reports) {
      batch = {};
      const counted: RolloutRef[] = [];
      const refused: Array<{ report: RolloutRef; verification: Verification }> = [];
      for (const r of reports) {
        const v = vouched(o.rollout, r, await verifier.check(r.device, rolloutMessage(r), r.signature));
        if (counts(v, requireEnrolled)) counted.push(r);
        else refused.push({ report: r, verification: v });
      }
      batch = undefined;
      return { counted, refused };
    },
  };
}
