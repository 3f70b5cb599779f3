// Which devices read target T's key (SPEC §16): the enrolled devices whose target T is. A device counts only through
// a certificate devices/NAME.cert that verifies against the operator's enrolment key (a certificate planted in the
// repository by whoever can push never receives a key), that devices/revoked.toml does not revoke, and whose vouched
// labels (never what a device says of itself) put it in T: the first fleet.toml target that takes it, as a device
// picks its own (SPEC §13), so a device never holds the key of a target whose plan it does not run.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { selectTarget, type Fleet } from '../core/fleet.js';
import { CERTIFICATE_DIR, verifyCertificate, type DeviceCertificate } from '../identity/certificate.js';
import { IdentityError } from '../identity/identity-error.js';
import { NO_REVOCATIONS, parseRevocations, REVOCATIONS_FILE, revokedReason } from '../identity/revocations.js';
import type { PublicKey } from '../trust/minisign.js';
import type { SecretsRepo } from './secrets-repo.js';

export interface TargetReader {
  device: string;
  ageRecipient: string;
  file: string;
}

/** A certificate that gives no key, and why (forged, revoked, expired, unreadable). */
export interface RefusedCertificate {
  file: string;
  code: string;
  reason: string;
}

export interface TargetReaders {
  readers: TargetReader[];
  /** Certificates that do not count at all: each is said, since a device that expected a key will not get one. */
  refused: RefusedCertificate[];
  /** Valid certificates of devices whose target is another one (or none). */
  elsewhere: { device: string; target?: string }[];
}

/** Every valid certificate of the repository, once; then the readers of any target are a filter over them. */
export async function enrolledDevices(
  repo: SecretsRepo,
  o: { enrollmentKeys: readonly PublicKey[]; now: number },
): Promise<{ certificates: DeviceCertificate[]; files: Map<string, string>; refused: RefusedCertificate[] }> {
  if (!o.enrollmentKeys.length)
    throw new Error('enrolledDevices needs the enrolment key: readers are never computed from unverified certificates');
  // A revocation list that is there but unreadable is not an empty one: fail closed, as devices do. And it must be the
  // signed one: a revocation taken out of it since (or the whole file removed) would hand a stolen device the key.
  const revokedBytes = await repo.readSigned(
    REVOCATIONS_FILE,
    'it says which devices are revoked (and so never get a key)',
  );
  const revokedText = revokedBytes && new TextDecoder().decode(revokedBytes);
  const revocations = revokedText === undefined ? NO_REVOCATIONS : parseRevocations(revokedText, REVOCATIONS_FILE);
  let names: string[] = [];
  try {
    names = readdirSync(join(repo.root, CERTIFICATE_DIR)).filter((n) => n.endsWith('.cert') && n.length > 5);
  } catch {
    /* no devices/: nobody is enrolled */
  }
  const certificates: DeviceCertificate[] = [];
  const files = new Map<string, string>();
  const refused: RefusedCertificate[] = [];
  for (const name of names.sort()) {
    const file = `${CERTIFICATE_DIR}/${name}`;
    try {
      const text = await repo.readText(file);
      if (text === undefined) continue;
      const cert = verifyCertificate(text, {
        enrollmentKeys: o.enrollmentKeys,
        // One certificate per device name, found where devices and `fleet status` look for it.
        device: name.slice(0, -'.cert'.length),
        now: o.now,
        file,
        revoked: (c) => revokedReason(revocations, c),
      });
      certificates.push(cert);
      files.set(cert.device, file);
    } catch (e) {
      if (e instanceof IdentityError) refused.push({ file, code: e.code, reason: e.message });
      else if (e instanceof Error && 'code' in e && typeof e.code === 'string')
        refused.push({ file, code: e.code, reason: e.message });
      else throw e;
    }
  }
  return { certificates, files, refused };
}

/** The readers of `target` among the enrolled devices. */
export function readersOf(
  target: string,
  fleet: Fleet,
  enrolled: Awaited<ReturnType<typeof enrolledDevices>>,
): TargetReaders {
  const readers: TargetReader[] = [];
  const elsewhere: TargetReaders['elsewhere'] = [];
  for (const cert of enrolled.certificates) {
    const chosen = selectTarget(fleet, cert.device, cert.labels);
    if (chosen?.target.name === target)
      readers.push({ device: cert.device, ageRecipient: cert.ageRecipient, file: enrolled.files.get(cert.device)! });
    else elsewhere.push({ device: cert.device, ...(chosen && { target: chosen.target.name }) });
  }
  return { readers, refused: enrolled.refused, elsewhere };
}
