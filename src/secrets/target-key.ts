// A target's own age key (SPEC §16): one secret is encrypted once, to the target's recipient, whatever the number of
// devices that read it; the target's private key (secrets/keys/T.age, an identity file as age-keygen writes it) is
// what is encrypted to each device, so enrolling or revoking a device rewrites that one small file, and the secrets
// only at a rekey. The key file is also encrypted to the operators (secrets/operators.txt): they rekey and list.
import { formatAgeIdentityFile, parseAgeIdentityFile } from '../identity/age-identity-file.js';
import { decryptWith, encryptTo, newAgeIdentity } from './age-codec.js';
import { formatRecipientsFile } from './recipients-file.js';
import { SecretError } from './secret-error.js';
import { isSecretName, recipientsPath, targetKeyPath } from '../core/secret-paths.js';
import type { SecretsRepo } from './secrets-repo.js';
import type { TargetReader } from './target-readers.js';

export interface NewTargetKey {
  target: string;
  /** AGE-SECRET-KEY-1…: held in memory to re-encrypt; never printed or written in the clear. */
  identity: string;
  recipient: string;
  /** secrets/keys/T.age, armored. */
  keyFile: Uint8Array;
  /** secrets/recipients/T.txt. */
  recipientsFile: Uint8Array;
  readers: readonly TargetReader[];
  operators: readonly string[];
}

/** Why `target` cannot have secrets (its files would be names `sign` does not list), or undefined. */
export function targetNameProblem(target: string): string | undefined {
  return isSecretName(target)
    ? undefined
    : `target ${JSON.stringify(target)} cannot have secrets: its key file ${targetKeyPath(target)} needs a name of letters, digits, "_" and "-" (rename the target in fleet.toml)`;
}

/** A new key for `target`, wrapped to its readers and the operators; refused when nobody at all could open it. */
export async function makeTargetKey(
  target: string,
  readers: readonly TargetReader[],
  operators: readonly string[],
  now: number,
): Promise<NewTargetKey> {
  if (readers.length === 0 && operators.length === 0)
    throw new SecretError(
      'KS_SECRET_OPERATOR',
      `no one could read target ${target}'s key: no enrolled device is in target ${target} and secrets/operators.txt lists no operator ` +
        '(enrol a device of the target with keystonectl enroll, or add your age recipient to secrets/operators.txt)',
      targetKeyPath(target),
    );
  return wrapTargetKey(target, await newAgeIdentity(), readers, operators, now);
}

/**
 * `id`, a target's key, wrapped to its readers and the operators: a new key (above), or the same one after an enrolment
 * (`secret rewrap`: only the key file changes, no secret is re-encrypted).
 */
export async function wrapTargetKey(
  target: string,
  id: { identity: string; recipient: string },
  readers: readonly TargetReader[],
  operators: readonly string[],
  now: number,
): Promise<NewTargetKey> {
  const recipients = [...new Set([...readers.map((r) => r.ageRecipient), ...operators])];
  const keyFile = await encryptTo(recipients, new TextEncoder().encode(formatAgeIdentityFile(id, now)));
  const recipientsFile = new TextEncoder().encode(
    formatRecipientsFile(target, { recipient: id.recipient, readers: readers.map((r) => r.device), operators }),
  );
  return { target, identity: id.identity, recipient: id.recipient, keyFile, recipientsFile, readers, operators };
}

/** Writes the key file and the recipients file of a new target key. */
export function writeTargetKey(repo: SecretsRepo, k: NewTargetKey): void {
  repo.write(targetKeyPath(k.target), k.keyFile);
  repo.write(recipientsPath(k.target), k.recipientsFile);
}

/** The target's identity, when one of `identities` opens its key file; undefined when none does. Throws when damaged. */
export async function openTargetKey(
  identities: readonly string[],
  keyFile: Uint8Array,
  file: string,
): Promise<{ identity: string; recipient: string } | undefined> {
  let plain: Uint8Array | undefined;
  try {
    plain = await decryptWith(identities, keyFile);
  } catch (e) {
    throw new SecretError('KS_SECRET_CORRUPT', `${file}: ${(e as Error).message}`, file);
  }
  if (!plain) return undefined;
  const parsed = parseAgeIdentityFile(new TextDecoder().decode(plain));
  if ('problem' in parsed)
    throw new SecretError('KS_SECRET_CORRUPT', `${file} does not hold a target key: ${parsed.problem}`, file);
  return parsed;
}

/** Every target key in the repository the operator opens, and the targets whose key files they cannot open. */
export async function openTargetKeys(
  repo: SecretsRepo,
  identities: readonly string[],
): Promise<{ opened: Map<string, { identity: string; recipient: string }>; unopened: string[] }> {
  const opened = new Map<string, { identity: string; recipient: string }>();
  const unopened: string[] = [];
  for (const target of repo.targetsWithFiles().keys) {
    const file = targetKeyPath(target);
    const bytes = await repo.read(file);
    if (!bytes) continue;
    const key = await openTargetKey(identities, bytes, file);
    if (key) opened.set(target, key);
    else unopened.push(target);
  }
  return { opened, unopened };
}
