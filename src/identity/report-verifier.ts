// Which reports count (SPEC §8, §15): a report is its device's when its signature verifies against that device's
// certificate, and the certificate against an enrolment key trusted here. One certificate per device read, looked up
// by name (devices/<name>.cert): never a list of the fleet, so what a reader does grows with the reports it reads,
// not with the fleet.
//
//   verified    signed by the key the device's valid certificate names
//   forged      the device is enrolled, and this report is not its: a signature that fails, another key, or none,
//               made after the certificate was issued (before it: unverified, a report of the device's earlier life)
//   revoked     the certificate is in devices/revoked.toml
//   unverified  nothing to check it against: no enrolment key here, no certificate, one that is refused (expired,
//               another name, an unknown signer), or an unsigned report of an earlier agent
//
// A reader counts verified reports, and unverified ones of devices that are not enrolled only when the fleet does
// not require enrolment ([rollout] require_enrolled = false). Forged and revoked ones never count.
import { verifyEd25519, type PublicKey } from '../trust/minisign.js';
import { verifyCertificate, type DeviceCertificate } from './certificate.js';
import { IdentityError } from './identity-error.js';
import { reportKeyId, type ReportSignature } from './report-signature.js';
import { isoTime } from '../core/iso-time.js';

export type Verdict = 'verified' | 'unverified' | 'forged' | 'revoked';
export const VERDICTS: readonly Verdict[] = ['verified', 'unverified', 'forged', 'revoked'];

export interface Verification {
  verdict: Verdict;
  /** Why, for people: absent when verified. */
  reason?: string;
  /** The device has a valid certificate: then only a verified report of it counts, whatever the fleet requires. */
  enrolled: boolean;
  /** Where the certificate came from, when one was found. */
  certificate?: string;
  /** The labels the device's valid certificate vouches for (what a selector wave may admit it by). */
  labels?: Readonly<Record<string, string>>;
}

/** A device's certificate text and where it was found (`devices/gw-1.cert`), or undefined. */
export type CertificateLookup = (device: string) => Promise<{ text: string; file: string } | undefined>;

export interface ReportVerifierOptions {
  /** The enrolment keys trusted here (`--enrollment-key`); none: nothing can be verified. */
  enrollmentKeys: readonly PublicKey[];
  certificateOf: CertificateLookup;
  /** devices/revoked.toml's say on a certificate (identity/revocations.ts): the reason, or undefined. */
  revoked?: (c: DeviceCertificate) => string | undefined;
  /** ms, for certificate expiry: asked at each check, since a verifier lives as long as a commit is held. */
  now: () => number;
}

type CertState =
  | { kind: 'none'; reason: string }
  | { kind: 'refused'; error: IdentityError; file: string }
  | { kind: 'ok'; cert: DeviceCertificate; file: string };

/** A certificate looked up is looked up again after this long: one refused for a clock's sake may pass later. */
const CERT_CACHE_MS = 5 * 60_000;
/**
 * Certificates kept per verifier, the least recently used going first: a gate on a fleet of 100,000 meets new devices
 * at every sampled read, and a commit may be held for days (~2 kB a certificate: ~8 MB at most, not the fleet's).
 */
export const CERT_CACHE_ENTRIES = 4096;

export class ReportVerifier {
  private readonly certs = new Map<string, { at: number; state: Promise<CertState> }>();

  constructor(private readonly opts: ReportVerifierOptions) {}

  /**
   * The verdict on one report of `device`: `message` is what its signature covers (report-signature.ts), `at` when it
   * says it was made (ms; undefined for a rollout ref, which carries no time: taken as made now).
   */
  async check(
    device: string,
    message: Uint8Array,
    signature: ReportSignature | undefined,
    at?: number,
  ): Promise<Verification> {
    const c = await this.certificate(device);
    if (c.kind === 'none') return { verdict: 'unverified', reason: c.reason, enrolled: false };
    if (c.kind === 'refused') {
      const verdict = c.error.code === 'KS_CERT_REVOKED' ? 'revoked' : 'unverified';
      return { verdict, reason: c.error.message, enrolled: false, certificate: c.file };
    }
    const { cert, file } = c;
    if (cert.expiresAt !== undefined && this.opts.now() >= cert.expiresAt)
      return {
        verdict: 'unverified',
        reason: `${file}: the certificate expired at ${isoTime(cert.expiresAt)}`,
        enrolled: false,
        certificate: file,
      };
    const enrolledKey = reportKeyId(cert.reportKey.keyId);
    if (signature?.keyId === enrolledKey) {
      if (verifyEd25519(message, signature.signature, cert.reportKey.publicKey))
        return { verdict: 'verified', enrolled: true, certificate: file, labels: cert.labels };
      return {
        verdict: 'forged',
        reason: `the signature does not match what the report says (key ${enrolledKey} of ${file})`,
        enrolled: true,
        certificate: file,
      };
    }
    const what =
      signature === undefined
        ? 'unsigned'
        : `signed by key ${signature.keyId}, not ${device}'s enrolled key ${enrolledKey}`;
    if (at !== undefined && Number.isFinite(at) && at < cert.issuedAt)
      return {
        verdict: 'unverified',
        reason: `${what}, and made before ${file} was issued`,
        enrolled: true,
        certificate: file,
      };
    const reinstalled =
      signature === undefined ? '' : ` (a forgery, or ${device} was reinstalled and not enrolled again)`;
    return { verdict: 'forged', reason: `${what}${reinstalled}`, enrolled: true, certificate: file };
  }

  private certificate(device: string): Promise<CertState> {
    const now = this.opts.now();
    let entry = this.certs.get(device);
    if (entry && now - entry.at <= CERT_CACHE_MS) {
      // Most recently used last: a Map iterates in insertion order.
      this.certs.delete(device);
      this.certs.set(device, entry);
      return entry.state;
    }
    this.certs.delete(device);
    this.certs.set(device, (entry = { at: now, state: this.lookUp(device) }));
    if (this.certs.size > CERT_CACHE_ENTRIES) this.certs.delete(this.certs.keys().next().value!);
    return entry.state;
  }

  private async lookUp(device: string): Promise<CertState> {
    if (this.opts.enrollmentKeys.length === 0)
      return { kind: 'none', reason: 'no enrolment key to check it with (--enrollment-key)' };
    const found = await this.opts.certificateOf(device);
    if (!found) return { kind: 'none', reason: `${device} is not enrolled (no devices/${device}.cert)` };
    try {
      const cert = verifyCertificate(found.text, {
        enrollmentKeys: this.opts.enrollmentKeys,
        device,
        now: this.opts.now(),
        ...(this.opts.revoked && { revoked: this.opts.revoked }),
        file: found.file,
      });
      return { kind: 'ok', cert, file: found.file };
    } catch (e) {
      if (e instanceof IdentityError) return { kind: 'refused', error: e, file: found.file };
      throw e;
    }
  }
}

/** Whether a report with this verification counts (see the head of this file). */
export function counts(v: Verification, requireEnrolled: boolean): boolean {
  return v.verdict === 'verified' || (v.verdict === 'unverified' && !v.enrolled && !requireEnrolled);
}
