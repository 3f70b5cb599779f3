// A device certificate (SPEC §15): the operator's enrolment key vouching that a device name holds two public keys —
// the minisign key its reports are signed with and the age recipient its secrets are encrypted to — and, optionally,
// labels. `keystonectl enroll` writes one to devices/NAME.cert; readers of reports check it with the enrolment public
// key alone, so verifying one device's report never needs a list of every device.
//
// The file is a TOML body followed by a minisign signature block over the body's exact bytes (everything before the
// BEGIN line, its last newline included):
//
//   keystone-certificate = 1
//   device = "gw-1"
//   report_key = "RWQ…"               # the device's minisign public key, its base64 line
//   age_recipient = "age1…"
//   issued = 2026-12-04T10:00:00Z
//   expires = 2027-12-04T10:00:00Z     # optional
//   [labels]                           # optional: labels the operator vouches for
//   site = "berlin"
//   -----BEGIN KEYSTONE SIGNATURE-----
//   untrusted comment: signature from keystone enrolment key 1A2B3C4D5E6F7A8B
//   RUR…                               # prehashed (BLAKE2b-512), as `minisign -S` signs
//   trusted comment: timestamp:1796378400 device=gw-1
//   …                                  # the signature over the signature and the trusted comment
//   -----END KEYSTONE SIGNATURE-----
//
// So that no Keystone is needed to check one, minisign reads the two halves as they are:
//
//   awk '/^-----BEGIN KEYSTONE SIGNATURE-----$/ {exit} {print}' gw-1.cert > body
//   awk '/^-----END KEYSTONE SIGNATURE-----$/ {s=0} s {print} /^-----BEGIN KEYSTONE SIGNATURE-----$/ {s=1}' gw-1.cert > sig
//   minisign -V -m body -x sig -p enroll.pub
//
// (test/identity/certificate.test.ts runs exactly these lines against the real minisign.)
//
// A certificate has one spelling: the untrusted comment is fixed, base64 must be canonical and nothing may follow the
// END line, so any byte changed anywhere in the file is refused — no two files are the same certificate.
// Verification is the hot path of every rollout gate read (one certificate per device whose report counts): no
// scrypt, no cache, two Ed25519 checks by Node's crypto and a TOML parse of at most 8 KiB.
import { formatDiagnostic, sortDiagnostics } from '../core/errors.js';
import { deviceNameProblem } from '../core/labels.js';
import { parseTomlDocument } from '../core/toml-document.js';
import {
  keyIdHex,
  parsePublicKey,
  parseSignatures,
  signedTimestamp,
  verifySignature,
  type PublicKey,
  type Signature,
} from '../trust/minisign.js';
import { TrustError } from '../trust/trust-error.js';
import {
  BEGIN,
  certificateSchema,
  END,
  malformed,
  MAX_CERTIFICATE_BODY_BYTES,
  MAX_CERTIFICATE_CHARS,
  untrustedCommentFor,
} from './certificate-format.js';
import { IdentityError } from './identity-error.js';
import { isoTime } from '../core/iso-time.js';

export interface DeviceCertificate {
  device: string;
  reportKey: PublicKey;
  /** The report key's base64 line as the certificate spells it (`RWQ…`, 56 characters). */
  reportKeyText: string;
  ageRecipient: string;
  /** Labels the operator vouches for ({} when none). */
  labels: Record<string, string>;
  /** Milliseconds since the epoch (Date.now()'s unit), as every other time an agent keeps. */
  issuedAt: number;
  expiresAt?: number;
  /** keyIdHex of the enrolment key that signed it (minisign's spelling: upper-case hex, no leading zeros). */
  signer: string;
}

/** Where a device's certificate lives in the repository. */
export const CERTIFICATE_DIR = 'devices';
/** How far a certificate's `issued` may lie after the verifier's clock: enrolment machines and devices disagree a little. */
export const CERTIFICATE_FUTURE_SKEW_MS = 5 * 60_000;

const CERT_FILE_NAME = /^[^/\\]+$/;

/** `devices/NAME.cert`, or undefined when the device name cannot be one file name (it holds a `/` or is `.`/`..`). */
export function certificatePath(device: string): string | undefined {
  return CERT_FILE_NAME.test(device) && device !== '.' && device !== '..' && !deviceNameProblem(device)
    ? `${CERTIFICATE_DIR}/${device}.cert`
    : undefined;
}

// reportKeyLine has many importers that know it from here.
export { reportKeyLine } from './report-key.js';

/** Splits and parses a certificate without trusting it: the body, the signature block, the fields. KS_CERT_MALFORMED. */
export function parseCertificate(
  text: string,
  file: string,
): { cert: DeviceCertificate; signature: Signature; body: Uint8Array } {
  if (text.length > MAX_CERTIFICATE_CHARS)
    throw malformed(file, `${text.length} characters, more than a certificate's ${MAX_CERTIFICATE_CHARS}`);
  const at = text.indexOf(`${BEGIN}\n`);
  if (at < 0 || (at > 0 && text[at - 1] !== '\n'))
    throw malformed(
      file,
      text.includes(`${BEGIN}\r\n`)
        ? 'Windows line endings (CRLF): the file was changed after it was signed (git config core.autocrlf?)'
        : `no "${BEGIN}" line`,
    );
  if (text.indexOf(BEGIN, at + 1) >= 0) throw malformed(file, `"${BEGIN}" appears twice`);
  const bodyText = text.slice(0, at);
  const body = new TextEncoder().encode(bodyText);
  if (body.length > MAX_CERTIFICATE_BODY_BYTES)
    throw malformed(file, `its body is ${body.length} bytes, more than ${MAX_CERTIFICATE_BODY_BYTES}`);
  const block = text.slice(at + BEGIN.length + 1).split('\n');
  if (block.at(-1) === '') block.pop();
  if (block.length !== 5 || block[4] !== END)
    throw malformed(file, `the signature block is 4 lines between "${BEGIN}" and "${END}", ending the file`);
  const [uc, sigLine, tc, globalLine] = block as [string, string, string, string, string];
  let signature: Signature;
  try {
    [signature] = parseSignatures(`${uc}\n${sigLine}\n${tc}\n${globalLine}\n`) as [Signature];
  } catch (e) {
    if (e instanceof TrustError) throw malformed(file, e.message);
    throw e;
  }
  // One spelling per signature: base64 whose unused bits vary would make a second file of the same certificate.
  for (const [line, bytes] of [
    [
      sigLine,
      Buffer.concat([
        Buffer.from(signature.algorithm === 'prehashed' ? 'ED' : 'Ed', 'latin1'),
        signature.keyId,
        signature.signature,
      ]),
    ],
    [globalLine, Buffer.from(signature.globalSignature)],
  ] as const)
    if (bytes.toString('base64') !== line) throw malformed(file, 'the signature block is not canonical base64');
  if (signature.algorithm !== 'prehashed')
    throw malformed(
      file,
      'a legacy (not prehashed) signature: certificates are signed as `minisign -S` signs by default',
    );
  if (uc !== `untrusted comment: ${untrustedCommentFor(signature.keyId)}`)
    throw malformed(file, `the untrusted comment is not "${untrustedCommentFor(signature.keyId)}"`);
  const devices = [...signature.trustedComment.matchAll(/(?:^|\s)device=(\S*)/g)];
  if (devices.length !== 1 || !devices[0]![1])
    throw malformed(file, 'the trusted comment does not name the device once (device=NAME)');
  if (signedTimestamp(signature.trustedComment) === undefined)
    throw malformed(file, 'the trusted comment has no timestamp');

  const doc = parseTomlDocument(file, bodyText, certificateSchema);
  if (doc.diagnostics.length) {
    const [first, ...more] = sortDiagnostics(doc.diagnostics);
    throw malformed(
      file,
      `${formatDiagnostic(first!).replace(/ \[KS_[A-Z_]+\]$/, '')}${more.length ? ` (and ${more.length} more)` : ''}`,
    );
  }
  const v = doc.value!;
  const issuedAt = v.issued.getTime();
  const expiresAt = v.expires?.getTime();
  if (expiresAt !== undefined && expiresAt <= issuedAt)
    throw malformed(file, `expires (${v.expires!.toISOString()}) is not after issued (${v.issued.toISOString()})`);
  const labels: Record<string, string> = {};
  for (const [k, value] of Object.entries(v.labels ?? {})) labels[k] = value;
  const cert: DeviceCertificate = {
    device: v.device,
    reportKey: parsePublicKey(v.report_key),
    reportKeyText: v.report_key,
    ageRecipient: v.age_recipient,
    labels,
    issuedAt,
    ...(expiresAt !== undefined && { expiresAt }),
    signer: keyIdHex(signature.keyId),
  };
  return { cert, signature, body };
}

const iso = (ms: number) => isoTime(ms);

/**
 * Parses and checks a certificate: signed by one of `enrollmentKeys`, for `device` when given, valid at `now`
 * (milliseconds), not revoked. Returns it, or throws IdentityError with the failed check's code; every message
 * names `file`.
 */
export function verifyCertificate(
  text: string,
  o: {
    enrollmentKeys: readonly PublicKey[];
    device?: string;
    now: number;
    revoked?: (c: DeviceCertificate) => string | undefined;
    file: string;
  },
): DeviceCertificate {
  const { file } = o;
  const { cert, signature, body } = parseCertificate(text, file);
  const candidates = o.enrollmentKeys.filter(
    (k) => k.keyId.length === signature.keyId.length && k.keyId.every((b, i) => b === signature.keyId[i]),
  );
  if (!candidates.length) {
    const trusted = o.enrollmentKeys.map((k) => keyIdHex(k.keyId));
    throw new IdentityError(
      'KS_CERT_UNKNOWN_KEY',
      `${file}: signed by key ${cert.signer}, which is not a trusted enrolment key (${trusted.length ? `trusted: ${trusted.join(', ')}` : 'none is trusted: --enrollment-key FILE'})`,
      file,
    );
  }
  let failure: TrustError | undefined;
  for (const key of candidates) {
    try {
      verifySignature(body, signature, key, file);
      failure = undefined;
      break;
    } catch (e) {
      if (!(e instanceof TrustError)) throw e;
      failure = e;
    }
  }
  if (failure)
    throw new IdentityError(
      'KS_CERT_BAD_SIGNATURE',
      `${file}: the signature by enrolment key ${cert.signer} does not verify: ${failure.message}`,
      file,
    );
  // Signed, so what the trusted comment says is the operator's word too: it must agree with the body.
  const signedDevice = /(?:^|\s)device=(\S+)/.exec(signature.trustedComment)![1]!;
  if (signedDevice !== cert.device)
    throw new IdentityError(
      'KS_CERT_WRONG_DEVICE',
      `${file}: the signed trusted comment names device ${signedDevice}, the body ${cert.device}`,
      file,
    );
  if (o.device !== undefined && o.device !== cert.device)
    throw new IdentityError(
      'KS_CERT_WRONG_DEVICE',
      `${file}: a certificate of device ${cert.device}, not of ${o.device}`,
      file,
    );
  if (cert.expiresAt !== undefined && o.now > cert.expiresAt)
    throw new IdentityError(
      'KS_CERT_EXPIRED',
      `${file}: the certificate of ${cert.device} expired at ${iso(cert.expiresAt)} (now ${iso(o.now)}): enrol the device again`,
      file,
    );
  if (cert.issuedAt > o.now + CERTIFICATE_FUTURE_SKEW_MS)
    throw new IdentityError(
      'KS_CERT_EXPIRED',
      `${file}: the certificate of ${cert.device} is issued at ${iso(cert.issuedAt)}, more than 5 minutes after this clock (${iso(o.now)}): is a clock wrong?`,
      file,
    );
  const reason = o.revoked?.(cert);
  if (reason !== undefined)
    throw new IdentityError(
      'KS_CERT_REVOKED',
      `${file}: the certificate of ${cert.device} is revoked: ${reason}`,
      file,
    );
  return cert;
}
