// Where secrets live in the repository (SPEC §16). Every one of these files is listed in SHA256SUMS and signed.
//
//   secrets/NAME.age              a secret: an age file (armored or binary) encrypted to one or more targets' recipients
//   secrets/recipients/T.txt      target T's public recipient, as `age -R` reads it (comments name its readers)
//   secrets/keys/T.age            target T's private key (an age identity file), encrypted to T's devices and operators
//   secrets/operators.txt         the operators' recipients: every target key is also encrypted to them (rekey, ls)
import { SECRET_NAME } from './template.js';

export const SECRETS_DIR = 'secrets';
export const OPERATORS_FILE = 'secrets/operators.txt';
/** One secret, one target key, one recipients file: small by nature; larger is refused before it is read. */
export const MAX_SECRET_FILE_BYTES = 1024 * 1024;

export function secretPath(name: string): string {
  return `${SECRETS_DIR}/${name}.age`;
}
export function targetKeyPath(target: string): string {
  return `${SECRETS_DIR}/keys/${target}.age`;
}
export function recipientsPath(target: string): string {
  return `${SECRETS_DIR}/recipients/${target}.txt`;
}

/** True for a path `keystonectl sign` lists under secrets/ (and a device may read through the signed set). */
export function isSecretsPath(path: string): boolean {
  if (path === OPERATORS_FILE) return true;
  const m = /^secrets\/(?:(keys|recipients)\/)?([^/]+)\.(age|txt)$/.exec(path);
  if (!m) return false;
  const [, dir, name, ext] = m;
  if (!SECRET_NAME.test(name!)) return false;
  return dir === 'recipients' ? ext === 'txt' : ext === 'age';
}

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}
