// What a dry run can tell of the secrets a plan reads (SPEC §16): `secret db_password changed` when it can open them (an
// operator's identity that opens the targets' keys: --identity, KEYSTONE_AGE_IDENTITY), else — a pull request, where
// nothing may decrypt — `secret db_password ciphertext changed`, from the encrypted files. Values are never printed:
// a value's digest is keyed by a random key of this run only.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DesiredState } from '../core/desired-state.js';
import { CIPHERTEXT_DIGEST } from '../core/diff.js';
import { secretsRead, withSecretDigests } from '../core/secret-digests.js';
import { parseAgeIdentityFile } from '../identity/age-identity-file.js';
import { decryptWith } from '../secrets/age-codec.js';
import { SecretError } from '../secrets/secret-error.js';
import { MAX_SECRET_FILE_BYTES, secretPath } from '../secrets/secret-paths.js';
import type { RepoReader } from '../source/repo-reader.js';

export interface DryRunKeys {
  /** The target identities the operator's identity opened ([] without one). */
  targets: string[];
  /** This run's digest key. */
  key: Buffer;
}

/** The target keys under `<root>/secrets/keys/` that `identityFile` (an age identity file) opens. */
export async function dryRunKeys(root: string, identityFile: string | undefined): Promise<DryRunKeys> {
  const key = randomBytes(32);
  if (identityFile === undefined) return { targets: [], key };
  const parsed = parseAgeIdentityFile(readFileSync(identityFile, 'utf8'));
  if ('problem' in parsed) throw new SecretError('KS_SECRET_OPERATOR', `${identityFile} is not an age identity file: ${parsed.problem}`);
  const dir = join(root, 'secrets', 'keys');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.age'));
  } catch {
    return { targets: [], key };
  }
  const targets: string[] = [];
  for (const n of names) {
    const plain = await decryptWith([parsed.identity], readFileSync(join(dir, n))).catch(() => undefined);
    const t = plain && parseAgeIdentityFile(new TextDecoder().decode(plain));
    if (t && !('problem' in t)) targets.push(t.identity);
  }
  return { targets, key };
}

/** `state` with the digest of every secret it reads: of its value where `keys` open it, else of its encrypted file. */
export async function withDryRunDigests(reader: RepoReader, state: DesiredState, keys: DryRunKeys): Promise<DesiredState> {
  const names = secretsRead(state);
  if (names.length === 0) return state;
  const digests = new Map<string, string>();
  for (const name of names) {
    const file = secretPath(name);
    const r = await reader.readFile(file, MAX_SECRET_FILE_BYTES);
    if (!r.ok)
      throw new SecretError(
        r.code === 'KS_FILE_NOT_FOUND' ? 'KS_SECRET_MISSING' : 'KS_SECRET_CORRUPT',
        r.code === 'KS_FILE_NOT_FOUND' ? `secret ${name}: ${file} is not in ${reader.label}: every device would refuse this revision (keystonectl secret set ${name} --target T)` : `secret ${name}: ${r.message}`,
        file,
        name,
      );
    const value = keys.targets.length ? await decryptWith(keys.targets, r.bytes).catch(() => undefined) : undefined;
    digests.set(name, value ? `value:${createHmac('sha256', keys.key).update(value).digest('hex')}` : `${CIPHERTEXT_DIGEST}${createHash('sha256').update(r.bytes).digest('hex')}`);
  }
  return withSecretDigests(state, digests);
}
