// `keystonectl secret rm NAME`: removes secrets/NAME.age (SPEC §16). A recipe or plan that still uses it is warned
// about, not blocked: the operator may be removing both in one commit, and devices refuse a revision that reads a
// secret it does not hold, so nothing runs without it.
import { parseArgs } from 'node:util';
import { SecretError } from '../../secrets/secret-error.js';
import { isSecretName, secretPath } from '../../core/secret-paths.js';
import { secretReferences } from '../../secrets/secret-references.js';
import { SecretsRepo } from '../../secrets/secrets-repo.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { repoRoot } from '../repository-args.js';
import { SIGN_REMINDER } from '../secret-args.js';

export async function secretRm(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { repo: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const [name, ...extra] = positionals;
  if (name === undefined) throw new UsageError("secret rm needs the secret's NAME");
  if (extra.length) throw new UsageError(`unexpected argument ${extra[0]}`);
  if (!isSecretName(name))
    throw new UsageError(
      `${JSON.stringify(name)} is not a secret name: letters, digits, "_" and "-" (the file secrets/NAME.age)`,
    );
  const repo = new SecretsRepo(repoRoot(io.cwd, values.repo));
  const file = secretPath(name);
  if (!repo.secretNames().includes(name))
    throw new SecretError('KS_SECRET_MISSING', `there is no ${file} in ${repo.root}`, file, name);
  repo.remove(file);
  const usedBy = (await secretReferences(repo)).get(name) ?? [];
  if (usedBy.length)
    io.stderr.write(
      `warning: ${usedBy.join(', ')} still use${usedBy.length === 1 ? 's' : ''} secret ${name}: devices refuse a revision that reads a secret it does not hold; remove the use, or set the secret again\n`,
    );
  if (values.json) io.stdout.write(JSON.stringify({ removed: file, usedBy }) + '\n');
  else io.stdout.write(`removed ${file}\n${SIGN_REMINDER}\n`);
  return EXIT.OK;
}
