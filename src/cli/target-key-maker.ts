// New target keys for `secret set` (a target without one) and `secret rekey`: the readers computed once from the
// verified certificates, the operators from secrets/operators.txt, and what the operator must hear about both —
// certificates that give no key (forged, revoked, expired) and an operators file that is not the signed one.
import type { Fleet } from '../core/fleet.js';
import { SecretError } from '../secrets/secret-error.js';
import { OPERATORS_FILE } from '../secrets/secret-paths.js';
import type { SecretsRepo } from '../secrets/secrets-repo.js';
import { makeTargetKey, wrapTargetKey, type NewTargetKey } from '../secrets/target-key.js';
import { enrolledDevices, readersOf, type RefusedCertificate } from '../secrets/target-readers.js';
import type { PublicKey } from '../trust/minisign.js';

export class TargetKeyMaker {
  private enrolled?: Awaited<ReturnType<typeof enrolledDevices>>;
  private ops?: Awaited<ReturnType<SecretsRepo['operators']>>;

  constructor(
    private readonly repo: SecretsRepo,
    private readonly fleet: Fleet,
    private readonly enrollmentKeys: readonly PublicKey[],
    private readonly now: number,
  ) {}

  /**
   * A new key for `target` (or `keep`, its current key, wrapped anew: a rewrap): refused without an enrolment key,
   * since readers are only computed from verified certificates.
   */
  async make(target: string, keep?: { identity: string; recipient: string }): Promise<NewTargetKey> {
    if (!this.enrollmentKeys.length)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `target ${target} needs a new key, wrapped to its enrolled devices: give --enrollment-key PUB (the enrolment public key), so that only certificates it signed count`,
        undefined,
      );
    this.enrolled ??= await enrolledDevices(this.repo, { enrollmentKeys: this.enrollmentKeys, now: this.now });
    this.ops ??= await this.repo.operators();
    // A recipient slipped into the signed operators file would receive every target key made from now on: refused,
    // as a changed signed recipients file is. Adding an operator is reviewed and signed first, then keys are made.
    if (this.ops.state === 'changed')
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `${OPERATORS_FILE} is not the file SHA256SUMS lists (changed since the last signature): no key is wrapped to it until it is reviewed and signed (git diff ${OPERATORS_FILE}; keystonectl sign), then run this again`,
        OPERATORS_FILE,
      );
    const readers = readersOf(target, this.fleet, this.enrolled).readers;
    return keep ? wrapTargetKey(target, keep, readers, this.ops.recipients, this.now) : makeTargetKey(target, readers, this.ops.recipients, this.now);
  }

  /** Certificates that counted for nothing, once `make` ran. */
  refused(): RefusedCertificate[] {
    return this.enrolled?.refused ?? [];
  }

  /** Lines for stderr: what was left out, and an operators file someone changed since the last signature. */
  warnings(): string[] {
    const out = this.refused().map((r) => `warning: ${r.file} gives no key: ${r.reason.replace(`${r.file}: `, '')} [${r.code}]`);
    if (this.ops?.state === 'unlisted')
      out.push(`warning: ${OPERATORS_FILE} is not in SHA256SUMS (added since the last signature): the new key is also wrapped to ${this.ops.recipients.join(', ')}; check each is an operator's before you sign`);
    if (this.ops && this.ops.recipients.length === 0)
      out.push(`note: ${OPERATORS_FILE} lists no operator: only the devices open the new key, so no one can rekey or list this target's secrets later without setting them again`);
    return out;
  }
}
