// The operator's own age identity (SPEC §16): `--identity FILE`, else the file KEYSTONE_AGE_IDENTITY names; an identity
// file as `age-keygen -o` writes it (one or more AGE-SECRET-KEY-1… lines, `#` comments). Every target key is also
// encrypted to the recipients in secrets/operators.txt, so an operator holding one of their identities can open the
// target keys: to re-encrypt a target's secrets (rekey) and to tell which targets read a secret (ls).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ageRecipientOf } from '../identity/age-identity-file.js';
import { SecretError } from './secret-error.js';

export const IDENTITY_ENV = 'KEYSTONE_AGE_IDENTITY';

export interface OperatorIdentity {
  /** Where it came from: `--identity FILE` or `KEYSTONE_AGE_IDENTITY=FILE`. Named in messages, never the key. */
  source: string;
  /** AGE-SECRET-KEY-1…: never printed. */
  identities: string[];
  recipients: string[];
}

/** An identity file is a few lines; a larger file is not one. */
const MAX_IDENTITY_FILE_BYTES = 64 * 1024;

/** The operator's identity, or undefined when neither the flag nor the environment names one. */
export function operatorIdentity(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  cwd: string,
): OperatorIdentity | undefined {
  const file = flag ?? (env[IDENTITY_ENV] || undefined);
  if (file === undefined) return undefined;
  const source = flag !== undefined ? `--identity ${flag}` : `${IDENTITY_ENV}=${file}`;
  let text: string;
  try {
    const bytes = readFileSync(resolve(cwd, file));
    if (bytes.length > MAX_IDENTITY_FILE_BYTES) throw new Error(`${bytes.length} bytes, not an identity file`);
    text = bytes.toString('utf8');
  } catch (e) {
    throw new SecretError(
      'KS_SECRET_OPERATOR',
      `cannot read the operator identity (${source}): ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  const identities: string[] = [];
  const recipients: string[] = [];
  for (const [i, raw] of text.replace(/\r\n/g, '\n').split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const recipient = ageRecipientOf(line);
    // The reason names the line, never its text: it may be a key with a typo.
    if (recipient === undefined)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `the operator identity (${source}), line ${i + 1}: not an age X25519 identity (AGE-SECRET-KEY-1…, as age-keygen writes)`,
      );
    identities.push(line);
    recipients.push(recipient);
  }
  if (!identities.length)
    throw new SecretError(
      'KS_SECRET_OPERATOR',
      `the operator identity (${source}) holds no AGE-SECRET-KEY-1… line (make one with age-keygen -o FILE)`,
    );
  return { source, identities, recipients };
}

/** What to say when a command needs an identity and has none. */
export const IDENTITY_HINT = `give --identity FILE (or ${IDENTITY_ENV}=FILE): an age identity whose recipient is in secrets/operators.txt (age-keygen -o FILE makes one; add the "public key" line it prints to secrets/operators.txt, then rekey each target)`;
