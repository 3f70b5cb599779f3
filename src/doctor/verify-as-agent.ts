// Doctor's verification of a revision as the agent would verify it (step 1 of agent/take-revision.ts), for the
// first-revision check: the same verifyRevision with the device's keyring, clock, replay floor and options. Apart from
// first-revision-check.ts, which reads the revision and words what this finds.
import type { RepoReader } from '../source/repo-reader.js';
import { TrustError } from '../trust/trust-error.js';
import { VerifiedReader, verifyRevision } from '../trust/verify-revision.js';
import type { AppliedState } from './applied-state.js';
import type { DoctorSetup } from './doctor-setup.js';
import { isoTime } from '../core/iso-time.js';

/** `said`: who signed and when, for the line; empty when nothing was verified (--allow-unsigned). */
export type Verified =
  | { kind: 'verified'; reader: RepoReader; said: string }
  | { kind: 'refused'; error: TrustError }
  | { kind: 'no-keyring' };

/**
 * Step 1 of agent/take-revision.ts for a revision new to the device: verifyRevision with the device's keyring, its
 * clock, the replay floor of the state store, --max-age, --max-clock-skew, and --require-ref with the ref the revision
 * is read from. The revision the device runs (the directory unchanged since it was applied) is verified as the agent
 * verifies it again: its own signing time as the floor, no --max-age, and the very same signature.
 * --allow-unsigned: nothing is verified, as in the agent.
 */
export async function verifyAsAgent(
  setup: DoctorSetup,
  reader: RepoReader,
  rev: { id: string; ref?: string },
  applied: AppliedState,
  now: number,
): Promise<Verified> {
  if (setup.trust.unsigned) return { kind: 'verified', reader, said: '' };
  const trust = setup.verification;
  if (trust === undefined) return { kind: 'no-keyring' };
  const last = applied.kind === 'read' ? applied.revision : undefined;
  const runs = last !== undefined && last.id === rev.id && last.signedAt !== undefined;
  const floor = runs ? last.signedAt : applied.kind === 'read' ? applied.floor : undefined;
  try {
    const v = await verifyRevision(reader, {
      keyring: trust.keyring,
      now: Math.floor(now / 1000),
      ...(floor !== undefined && { notBefore: floor }),
      ...(trust.maxAgeSeconds !== undefined && !runs && { maxAgeSeconds: trust.maxAgeSeconds }),
      ...(trust.maxClockSkewSeconds !== undefined && { maxClockSkewSeconds: trust.maxClockSkewSeconds }),
      ...(rev.ref !== undefined && { ref: rev.ref }),
      ...(trust.requireRef === true && !runs && { requireRef: true }),
    });
    if (runs && v.signedAt !== last.signedAt)
      return {
        kind: 'refused',
        error: new TrustError(
          'KS_SIGNATURE_REPLAYED',
          `signed at ${isoTime(v.signedAt * 1000)}, not the signature of the revision this device runs under the same id (signed at ${isoTime(last.signedAt! * 1000)})`,
        ),
      };
    return {
      kind: 'verified',
      reader: new VerifiedReader(reader, v),
      said: `signed by ${v.signers.join(', ')} at ${isoTime(v.signedAt * 1000)}`,
    };
  } catch (e) {
    if (e instanceof TrustError) return { kind: 'refused', error: e };
    throw e;
  }
}
