// Writing a device certificate (keystonectl enroll): the body as TOML, signed with the enrolment key, read back before
// it is returned. Apart from certificate.ts, which reads and verifies certificates (what every agent runs; it never
// signs one).
import { deviceNameProblem, labelKeyProblem, labelValueProblem } from '../core/labels.js';
import { formatSignature, sign, type SecretKey } from '../trust/minisign.js';
import { ageRecipientProblem } from './age-recipient-syntax.js';
import { parseCertificate } from './certificate.js';
import { BEGIN, END, FORMAT_VERSION, malformed, untrustedCommentFor } from './certificate-format.js';
import { reportKeyProblem } from './report-key.js';
import { isoTime } from '../core/iso-time.js';

/** A key of the body as TOML writes it: bare when it can be, else a basic string. */
const tomlKey = (k: string) => (/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k));
/** A TOML basic string. JSON's escapes are TOML's for every text a certificate can hold (the round trip proves it). */
const tomlString = (s: string) => JSON.stringify(s);
/** RFC 3339 to the second, as TOML writes an offset date-time. */
const tomlDateTime = (ms: number) => isoTime(ms).replace(/\.\d{3}Z$/, 'Z');

/**
 * Writes a certificate: the body, signed with the enrolment key (prehashed, minisign's default), in the one layout
 * parseCertificate reads. Times are floored to the second. Refuses (KS_CERT_MALFORMED) anything the certificate could
 * not carry, by reading back what it wrote: what this signs, every verifier parses.
 */
export function signCertificate(
  body: {
    device: string;
    reportKey: string;
    ageRecipient: string;
    labels: Record<string, string>;
    issuedAt: number;
    expiresAt?: number;
  },
  enrollmentKey: SecretKey,
): string {
  const what = `the certificate of ${JSON.stringify(body.device)}`;
  const problem =
    deviceNameProblem(body.device) ??
    (/\p{Cs}/u.test(body.device)
      ? `${JSON.stringify(body.device)} is not a device name (a lone surrogate)`
      : undefined) ??
    reportKeyProblem(body.reportKey) ??
    ageRecipientProblem(body.ageRecipient) ??
    Object.entries(body.labels)
      .map(([k, v]) => labelKeyProblem(k) ?? labelValueProblem(v))
      .find((p) => p !== undefined) ??
    (!Number.isSafeInteger(Math.floor(body.issuedAt)) || body.issuedAt < 0 ? 'issuedAt is not a time' : undefined) ??
    (body.expiresAt !== undefined && !(Math.floor(body.expiresAt / 1000) > Math.floor(body.issuedAt / 1000))
      ? 'it would expire before it is issued'
      : undefined);
  if (problem) throw malformed(what, problem);
  const issuedAt = Math.floor(body.issuedAt / 1000) * 1000;
  const lines = [
    `keystone-certificate = ${FORMAT_VERSION}`,
    `device = ${tomlString(body.device)}`,
    `report_key = ${tomlString(body.reportKey)}`,
    `age_recipient = ${tomlString(body.ageRecipient)}`,
    `issued = ${tomlDateTime(issuedAt)}`,
    ...(body.expiresAt !== undefined ? [`expires = ${tomlDateTime(Math.floor(body.expiresAt / 1000) * 1000)}`] : []),
  ];
  const labelKeys = Object.keys(body.labels).sort();
  if (labelKeys.length)
    lines.push('[labels]', ...labelKeys.map((k) => `${tomlKey(k)} = ${tomlString(body.labels[k]!)}`));
  const text = lines.join('\n') + '\n';
  const sig = sign(
    new TextEncoder().encode(text),
    enrollmentKey,
    `timestamp:${issuedAt / 1000} device=${body.device}`,
    'prehashed',
    untrustedCommentFor(enrollmentKey.keyId),
  );
  const out = `${text}${BEGIN}\n${formatSignature(sig)}${END}\n`;
  // The round trip: a name or label this format cannot carry exactly is refused here, not by every device later.
  const back = parseCertificate(out, what).cert;
  if (
    back.device !== body.device ||
    back.reportKeyText !== body.reportKey ||
    back.ageRecipient !== body.ageRecipient ||
    JSON.stringify(sortedLabels(back.labels)) !== JSON.stringify(sortedLabels(body.labels))
  )
    throw malformed(what, 'its fields do not read back as written');
  return out;
}

function sortedLabels(labels: Record<string, string>): [string, string][] {
  return Object.keys(labels)
    .sort()
    .map((k) => [k, labels[k]!]);
}
