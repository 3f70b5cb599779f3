// What a dry run can tell of the secrets a plan reads (SPEC §16): `secret db_password changed` when it can open them (an
// operator's identity that opens the targets' keys: --identity, KEYSTONE_AGE_IDENTITY), else — a pull request, where
// nothing may decrypt — `secret db_password ciphertext changed`, from the encrypted files. Values are never printed:
// a value's digest is keyed by a random key of this run only.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DesiredState } from '../core/desired-state.js';
import { CIPHERTEXT_DIGEST } from '../core/diff.js';
import { secretsRead, withSecretDigests } from '../core/secret-digests.js';
import { parseAgeIdentityFile } from '../identity/age-identity-file.js';
import { decryptWith } from '../secrets/age-codec.js';
import type { OperatorIdentity } from '../secrets/operator-identity.js';
import { SecretError } from '../secrets/secret-error.js';
import { MAX_SECRET_FILE_BYTES, secretPath, targetKeyPath } from '../core/secret-paths.js';
import type { RepoReader } from '../source/repo-reader.js';

export interface DryRunKeys {
  /** The operator's identities (none: only ciphertexts are compared). */
  operator: readonly string[];
  /** The targets with a key file in the working tree: each side's own key file of that name is opened with `operator`. */
  targets: string[];
  /** This run's digest key. */
  key: Buffer;
}

/**
 * The operator's identity (operator-identity.ts: `--identity FILE` or KEYSTONE_AGE_IDENTITY, read and checked there,
 * as `secret ls` and `rekey` read it) and the targets of `<root>/secrets/keys/`.
 */
export function dryRunKeys(root: string, operator: OperatorIdentity | undefined): DryRunKeys {
  const key = randomBytes(32);
  if (operator === undefined) return { operator: [], targets: [], key };
  let targets: string[] = [];
  try {
    targets = readdirSync(join(root, 'secrets', 'keys'))
      .filter((n) => n.endsWith('.age'))
      .map((n) => n.slice(0, -'.age'.length));
  } catch {
    // No key file: nothing the identity could open.
  }
  return { operator: operator.identities, targets, key };
}

/** The target identities of `reader`'s own key files that the operator opens (a base has its own keys, before a rekey). */
async function targetIdentities(reader: RepoReader, keys: DryRunKeys): Promise<string[]> {
  if (!keys.operator.length) return [];
  const out: string[] = [];
  for (const t of keys.targets) {
    const r = await reader.readFile(targetKeyPath(t), MAX_SECRET_FILE_BYTES).catch(() => undefined);
    if (!r?.ok) continue;
    const plain = await decryptWith(keys.operator, r.bytes).catch(() => undefined);
    const id = plain && parseAgeIdentityFile(new TextDecoder().decode(plain));
    if (id && !('problem' in id)) out.push(id.identity);
  }
  return out;
}

/** `state` with the digest of every secret it reads: of its value where `keys` open it, else of its encrypted file. */
export async function withDryRunDigests(
  reader: RepoReader,
  state: DesiredState,
  keys: DryRunKeys,
): Promise<DesiredState> {
  const names = secretsRead(state);
  if (names.length === 0) return state;
  const identities = await targetIdentities(reader, keys);
  const digests = new Map<string, string>();
  for (const name of names) {
    const file = secretPath(name);
    const r = await reader.readFile(file, MAX_SECRET_FILE_BYTES);
    if (!r.ok)
      throw new SecretError(
        r.code === 'KS_FILE_NOT_FOUND' ? 'KS_SECRET_MISSING' : 'KS_SECRET_CORRUPT',
        r.code === 'KS_FILE_NOT_FOUND'
          ? `secret ${name}: ${file} is not in ${reader.label}: every device would refuse this revision (keystonectl secret set ${name} --target T)`
          : `secret ${name}: ${r.message}`,
        file,
        name,
      );
    const value = identities.length ? await decryptWith(identities, r.bytes).catch(() => undefined) : undefined;
    digests.set(
      name,
      value
        ? `value:${createHmac('sha256', keys.key).update(value).digest('hex')}`
        : `${CIPHERTEXT_DIGEST}${createHash('sha256').update(r.bytes).digest('hex')}`,
    );
  }
  return withSecretDigests(state, digests);
}
