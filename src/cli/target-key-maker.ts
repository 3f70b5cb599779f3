// New target keys for `secret set` (a target without one), `secret rekey` and `secret rewrap`: the readers computed
// once from the verified certificates, the operators from secrets/operators.txt, and what the operator must hear about
// both — certificates that give no key (forged, revoked, expired), and who the key goes to that it did not go to before.
// Every file the readers are decided by (fleet.toml, devices/revoked.toml, secrets/operators.txt) must be the signed one
// when the command verified SHA256SUMS (secret-trust.ts): anyone who can push may edit them.
import type { Fleet } from '../core/fleet.js';
import type { RecipientsFile } from '../secrets/recipients-file.js';
import { SecretError } from '../secrets/secret-error.js';
import type { SecretsRepo } from '../secrets/secrets-repo.js';
import { makeTargetKey, wrapTargetKey, type NewTargetKey } from '../secrets/target-key.js';
import { enrolledDevices, readersOf, type RefusedCertificate } from '../secrets/target-readers.js';
import type { PublicKey } from '../trust/minisign.js';

export class TargetKeyMaker {
  private enrolled?: Awaited<ReturnType<typeof enrolledDevices>>;
  private ops?: string[];

  constructor(
    private readonly repo: SecretsRepo,
    private readonly fleet: Fleet,
    private readonly enrollmentKeys: readonly PublicKey[],
    private readonly now: number,
  ) {}

  /**
   * A new key for `target` (or `keep`, its current key, wrapped anew: a rewrap): refused without an enrolment key,
   * since readers are only computed from verified certificates, and unless fleet.toml, devices/revoked.toml and
   * secrets/operators.txt are the signed files.
   */
  async make(target: string, keep?: { identity: string; recipient: string }): Promise<NewTargetKey> {
    if (!this.enrollmentKeys.length)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `target ${target} needs a new key, wrapped to its enrolled devices: give --enrollment-key PUB (the enrolment public key), so that only certificates it signed count`,
        undefined,
      );
    // Adding an operator, a target or un-revoking a device is reviewed and signed first; then keys are made.
    this.repo.checkFleetSigned();
    const operators = await this.operators();
    this.enrolled ??= await enrolledDevices(this.repo, { enrollmentKeys: this.enrollmentKeys, now: this.now });
    const readers = readersOf(target, this.fleet, this.enrolled).readers;
    return keep
      ? wrapTargetKey(target, keep, readers, operators, this.now)
      : makeTargetKey(target, readers, operators, this.now);
  }

  /** The operators' recipients, from the signed secrets/operators.txt (none when there is none). */
  async operators(): Promise<string[]> {
    this.ops ??= await this.repo.operators();
    return this.ops;
  }

  /** Certificates that counted for nothing, once `make` ran. */
  refused(): RefusedCertificate[] {
    return this.enrolled?.refused ?? [];
  }

  /** Lines for stderr: what was left out, and a key no operator can open. */
  warnings(): string[] {
    const out = this.refused().map(
      (r) => `warning: ${r.file} gives no key: ${r.reason.replace(`${r.file}: `, '')} [${r.code}]`,
    );
    if (this.ops && this.ops.length === 0)
      out.push(
        "note: secrets/operators.txt lists no operator: only the devices open the new key, so no one can rekey or list this target's secrets later without setting them again",
      );
    return out;
  }
}

/** Who a key is wrapped to now against what the target's recipients file said before (null: it did not say). */
export interface WrapChange {
  readers: string[];
  readersAdded: string[] | null;
  readersRemoved: string[] | null;
  operators: readonly string[];
  operatorsAdded: string[] | null;
  operatorsRemoved: string[] | null;
}

/**
 * What the recipients file said before a key was made or rewrapped: 'new' for a target that had none (everyone the key
 * goes to is added), undefined when it is unknown (unreadable, or not the signed file).
 */
export type Before = RecipientsFile | 'new' | undefined;

export function wrapChange(k: NewTargetKey, before: Before): WrapChange {
  const readers = k.readers.map((r) => r.device);
  const was = before === 'new' ? [] : before?.readers;
  const ops = before === 'new' ? [] : before?.operatorRecipients;
  return {
    readers,
    readersAdded: was ? readers.filter((d) => !was.includes(d)) : null,
    readersRemoved: was ? was.filter((d) => !readers.includes(d)) : null,
    operators: k.operators,
    operatorsAdded: ops ? k.operators.filter((o) => !ops.includes(o)) : null,
    operatorsRemoved: ops ? ops.filter((o) => !k.operators.includes(o)) : null,
  };
}

/**
 * Lines for stdout, printed before anything is written: every device and operator the key goes to, and which of them
 * it did not go to before — an operator recipient added to secrets/operators.txt and signed without a second look
 * shows here.
 */
export function wrapLines(c: WrapChange, before: Before): string[] {
  const list = (xs: readonly string[]) => xs.join(', ') || 'none';
  const change = (added: string[] | null, removed: string[] | null, unknown: string) =>
    before === 'new'
      ? ' (a new key: all added)'
      : added === null
        ? unknown
        : added.length || removed!.length
          ? ` (added: ${list(added)}; removed: ${list(removed!)})`
          : ' (unchanged)';
  const wasOperators = before === 'new' || before === undefined ? undefined : before.operators;
  return [
    `  readers: ${list(c.readers)}${change(c.readersAdded, c.readersRemoved, ' (who read before is not stated)')}`,
    `  operators: ${list(c.operators)}${change(c.operatorsAdded, c.operatorsRemoved, ` (was ${wasOperators ?? 'not stated'}; which, the recipients file does not say)`)}`,
  ];
}
