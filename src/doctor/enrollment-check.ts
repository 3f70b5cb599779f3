// The device's certificate (SPEC §15), when the agent is given --enrollment-key: found where the agent finds it (the
// --certificate file, else devices/<device>.cert of the revision the doctor reads: the directory, or the commit applied
// last), verified as readers of its reports verify it (identity/certificate.ts, with devices/revoked.toml of the same
// revision), and naming the keys this device holds: a reinstalled device that was not enrolled again has new keys,
// and its reports would not verify.
import { readFile } from 'node:fs/promises';
import { MAX_CERTIFICATE_FILE_BYTES } from '../agent/run-settings.js';
import { certificatePath, verifyCertificate, type DeviceCertificate } from '../identity/certificate.js';
import { readDevicePublicIdentity, type DevicePublicIdentity } from '../identity/device-keys.js';
import { IdentityError } from '../identity/identity-error.js';
import {
  NO_REVOCATIONS,
  parseRevocations,
  REVOCATIONS_FILE,
  revokedReason,
  type Revocations,
} from '../identity/revocations.js';
import { MAX_DOCUMENT_BYTES, type RepoReader } from '../source/repo-reader.js';
import { parsePublicKey, type PublicKey } from '../trust/minisign.js';
import type { AppliedState } from './applied-state.js';
import { fail, pass, skip, warn, type CheckResult } from './check-result.js';
import { currentReader } from './current-plan.js';
import type { DoctorSetup } from './doctor-setup.js';
import { isoTime } from '../core/iso-time.js';

const enrolHint = (device: string) =>
  `enrol it: keystone identity --json > ${device}.identity.json on the device, then keystonectl enroll --key ENROLL.key --identity ${device}.identity.json --out devices/${device}.cert, and commit the certificate (or give the agent --certificate FILE)`;

export async function checkEnrollment(
  setup: Pick<DoctorSetup, 'enrollment' | 'device' | 'labels' | 'source' | 'stateDir'>,
  applied: AppliedState,
  now: number,
): Promise<CheckResult> {
  const files = setup.enrollment?.keyFiles ?? [];
  if (files.length === 0)
    return skip(
      'enrollment',
      'no --enrollment-key: this device checks no certificates, and its reports are shown unverified where the fleet checks them',
    );
  const keys: PublicKey[] = [];
  for (const file of files) {
    try {
      keys.push(parsePublicKey(await readFile(file, 'utf8')));
    } catch (e) {
      return fail(
        'enrollment',
        `the enrollment key ${file} cannot be used: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
        "give --enrollment-key the public key file of the operator's enrolment key (keystonectl keygen wrote it)",
        (e as { code?: string }).code,
      );
    }
  }
  // The revision the agent reads: its devices/ (when no certificate is given) and its revocations.
  const opened = await currentReader(setup, applied);
  const reader = 'reader' in opened ? opened.reader : undefined;
  const found = await findCertificate(setup, reader);
  if ('missing' in found) return warn('enrollment', found.missing, enrolHint(setup.device));
  let revocations: Revocations;
  try {
    revocations = reader ? await readRevocations(reader) : NO_REVOCATIONS;
  } catch (e) {
    if (!(e instanceof IdentityError)) throw e;
    return fail(
      'enrollment',
      e.message,
      `correct ${REVOCATIONS_FILE} (keystonectl verify names every problem) and sign the repository again`,
      e.code,
    );
  }
  let cert: DeviceCertificate;
  try {
    cert = verifyCertificate(found.text, {
      enrollmentKeys: keys,
      device: setup.device,
      now,
      revoked: (c) => revokedReason(revocations, c),
      file: found.file,
    });
  } catch (e) {
    if (!(e instanceof IdentityError)) throw e;
    const fix =
      e.code === 'KS_CERT_REVOKED'
        ? `the operator revoked it in ${REVOCATIONS_FILE}: a device trusted again is taken out of that list (or enrolled with new keys, when the entry names its old report key), and the repository signed again`
        : enrolHint(setup.device);
    return fail('enrollment', e.message, fix, e.code);
  }
  const what = `${found.file}: device ${cert.device}, signed by enrolment key ${cert.signer}, issued ${isoTime(cert.issuedAt)}${cert.expiresAt !== undefined ? `, expires ${isoTime(cert.expiresAt)}` : ''}`;
  let own: DevicePublicIdentity | undefined;
  try {
    own = await readDevicePublicIdentity(setup.stateDir);
  } catch {
    return warn(
      'enrollment',
      `${what}; the device's own keys cannot be read (see identity), so whether it names them is not known`,
    );
  }
  const others = [
    ...(own === undefined || own.reportKey !== cert.reportKeyText ? [`report key ${cert.reportKeyText}`] : []),
    ...(own === undefined || own.ageRecipient !== cert.ageRecipient ? [`age recipient ${cert.ageRecipient}`] : []),
  ];
  if (others.length) {
    const held =
      own === undefined
        ? 'the device has no keys yet'
        : `the device holds report key ${own.reportKey} and age recipient ${own.ageRecipient}`;
    return {
      ...warn(
        'enrollment',
        `${what}; it names ${others.join(' and ')}, not this device's own (${held}): a reinstalled device not enrolled again, whose reports will not verify`,
        `re-enrol with keystonectl enroll --identity …: ${enrolHint(setup.device)}`,
      ),
      code: 'KS_CERT_OTHER_KEY',
    };
  }
  // A selector wave counts this device's reports by the labels its certificate vouches for, not by what it says.
  const unvouched = Object.entries(setup.labels).filter(([k, v]) => cert.labels[k] !== v);
  if (unvouched.length) {
    const said = unvouched.map(([k, v]) => `${k}=${v}`).join(', ');
    return warn(
      'enrollment',
      `${what}; it names this device's own keys, but does not vouch for its labels ${said}: a rollout wave that selects by them does not count this device's reports`,
      `enrol it again with them: keystonectl enroll --identity … ${unvouched.map(([k, v]) => `--label ${k}=${v}`).join(' ')} --force`,
    );
  }
  return pass('enrollment', `${what}; it names this device's own keys`);
}

/** The --certificate file, else devices/<device>.cert of the revision; `missing` says where none was found. */
async function findCertificate(
  setup: Pick<DoctorSetup, 'enrollment' | 'device'>,
  reader: RepoReader | undefined,
): Promise<{ file: string; text: string } | { missing: string }> {
  const given = setup.enrollment?.certificateFile;
  if (given !== undefined) {
    try {
      const text = await readFile(given, 'utf8');
      if (Buffer.byteLength(text) > MAX_CERTIFICATE_FILE_BYTES)
        return {
          missing: `--certificate ${given} is more than a certificate can be (${MAX_CERTIFICATE_FILE_BYTES} bytes)`,
        };
      return { file: given, text };
    } catch (e) {
      return {
        missing: `--certificate ${given} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      };
    }
  }
  const path = certificatePath(setup.device);
  if (path === undefined)
    return {
      missing: `the device name ${setup.device} cannot be a certificate's file name in devices/: give the agent --certificate FILE`,
    };
  if (!reader) return { missing: `no certificate given (--certificate) and no revision to look in for ${path} yet` };
  const r = await reader.readFile(path, MAX_CERTIFICATE_FILE_BYTES);
  if (!r.ok) return { missing: `no certificate for ${setup.device}: ${path} is not in ${reader.label} (${r.message})` };
  return { file: `${path} (${reader.label})`, text: new TextDecoder().decode(r.bytes) };
}

async function readRevocations(reader: RepoReader): Promise<Revocations> {
  const r = await reader.readFile(REVOCATIONS_FILE, MAX_DOCUMENT_BYTES);
  if (!r.ok) {
    if (r.code === 'KS_FILE_NOT_FOUND') return NO_REVOCATIONS;
    throw new IdentityError(
      'KS_REVOCATIONS_INVALID',
      `${REVOCATIONS_FILE} (${reader.label}): ${r.message}`,
      REVOCATIONS_FILE,
    );
  }
  return parseRevocations(new TextDecoder().decode(r.bytes), REVOCATIONS_FILE);
}
