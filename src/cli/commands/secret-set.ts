// `keystonectl secret set NAME --target T`: secrets/NAME.age, encrypted to the recipient of each target (SPEC §16).
// The value comes from --file or stdin, never the command line (shell history, ps), and is never printed. A target
// without a key gets one, wrapped to its enrolled devices and the operators. A target's recipients file that is not
// the one SHA256SUMS lists is refused: whoever swapped it would receive the secret.
import { parseArgs } from 'node:util';
import { ageFormat, encryptTo } from '../../secrets/age-codec.js';
import { operatorIdentity } from '../../secrets/operator-identity.js';
import { parseRecipientsFile } from '../../secrets/recipients-file.js';
import { SecretError } from '../../secrets/secret-error.js';
import { isSecretName, MAX_SECRET_FILE_BYTES, recipientsPath, secretPath, targetKeyPath } from '../../secrets/secret-paths.js';
import { SecretsRepo } from '../../secrets/secrets-repo.js';
import { openTargetKey, writeTargetKey, type NewTargetKey } from '../../secrets/target-key.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { repoRoot } from '../repository-args.js';
import { checkTargets, enrollmentKeysFrom, readSecretValue, SIGN_REMINDER } from '../secret-args.js';
import { TargetKeyMaker } from '../target-key-maker.js';

interface TargetUse {
  target: string;
  recipient: string;
  created?: NewTargetKey;
  readers?: string[];
  operators?: number;
}

export async function secretSet(argv: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        target: { type: 'string', multiple: true },
        file: { type: 'string' },
        repo: { type: 'string' },
        binary: { type: 'boolean', default: false },
        'enrollment-key': { type: 'string', multiple: true },
        identity: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (e) {
    // parseArgs names the option, never its value; say where a value does go.
    throw new UsageError(`${(e as Error).message.split('. ')[0]}: a secret's value comes from --file FILE or stdin, never the command line`);
  }
  const { values, positionals } = parsed;
  const [name, ...extra] = positionals;
  if (name === undefined) throw new UsageError('secret set needs the secret\'s NAME: keystonectl secret set NAME --target T < value');
  // Not echoed: the extra word is most likely the value itself.
  if (extra.length)
    throw new UsageError(`secret set takes no value argument (${extra.length} word${extra.length === 1 ? '' : 's'} after ${name}, not shown): shell history and ps would keep it; pipe the value on stdin or give --file FILE`);
  if (!isSecretName(name)) throw new UsageError(`${JSON.stringify(name)} is not a secret name: letters, digits, "_" and "-", at most 63, starting with a letter or digit (it is the file secrets/NAME.age)`);
  if (!values.target?.length) throw new UsageError('--target T is required (repeatable): the fleet.toml targets whose devices read the secret');

  const repo = new SecretsRepo(repoRoot(io.cwd, values.repo));
  const fleet = await repo.fleet();
  const targets = checkTargets(values.target, fleet);
  const enrollmentKeys = enrollmentKeysFrom(values['enrollment-key'] ?? [], io.cwd);
  const operator = operatorIdentity(values.identity, io.env, io.cwd);
  const now = nowMs(io);
  const maker = new TargetKeyMaker(repo, fleet, enrollmentKeys, now);
  const warnings: string[] = [];

  // 1. Every target's recipient, checked, before the value is read: a refusal costs nothing typed or piped.
  const uses: TargetUse[] = [];
  for (const target of targets) {
    const recFile = recipientsPath(target);
    const keyFile = targetKeyPath(target);
    const recBytes = await repo.read(recFile);
    const keyBytes = await repo.read(keyFile);
    if (!recBytes && !keyBytes) {
      uses.push({ target, recipient: '', created: await maker.make(target) });
      continue;
    }
    if (!recBytes || !keyBytes)
      throw new SecretError('KS_SECRET_OPERATOR', `target ${target} has ${recBytes ? recFile : keyFile} but no ${recBytes ? keyFile : recFile}: make both again with keystonectl secret rekey --target ${target}`, recBytes ? keyFile : recFile);
    const state = await repo.signedState(recFile, recBytes);
    if (state === 'changed')
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `${recFile} is not the file SHA256SUMS lists: someone changed target ${target}'s recipient since the last signature, and a swapped recipient would send the secret to whoever holds it. ` +
          `Check the file (git log -p ${recFile}); keystonectl secret rekey --target ${target} makes a new key and recipient`,
        recFile,
      );
    if (state === 'unlisted') warnings.push(`warning: ${recFile} is not in SHA256SUMS (added since the last signature): check it is the one keystonectl made before you sign`);
    const rec = parseRecipientsFile(new TextDecoder().decode(recBytes), recFile);
    // With an identity that opens the key, the recipient is checked against the key itself: nothing else can swap it.
    if (operator) {
      const key = await openTargetKey(operator.identities, keyBytes, keyFile);
      if (key && key.recipient !== rec.recipient)
        throw new SecretError('KS_SECRET_OPERATOR', `${recFile} names ${rec.recipient}, and target ${target}'s key (${keyFile}) is ${key.recipient}: the recipient was swapped; keystonectl secret rekey --target ${target}`, recFile);
    }
    uses.push({ target, recipient: rec.recipient, ...(rec.readers && { readers: rec.readers }), ...(rec.operators !== undefined && { operators: rec.operators }) });
  }

  // 2. The value, encrypted once to every target's recipient.
  const value = await readSecretValue(values.file, io);
  for (const u of uses) if (u.created) u.recipient = u.created.recipient;
  const file = secretPath(name);
  const bytes = await encryptTo([...new Set(uses.map((u) => u.recipient))], value, { binary: values.binary });
  value.fill(0);
  if (bytes.length > MAX_SECRET_FILE_BYTES)
    throw new UsageError(`encrypted, the value is ${bytes.length} bytes, more than a secret's ${MAX_SECRET_FILE_BYTES}${values.binary ? '' : ' (--binary saves the armor\'s third)'}`);
  const replaced = (await repo.read(file)) !== undefined;

  // 3. Write: the new target keys first, so that no secret is ever encrypted to a key that is not in the repository.
  for (const u of uses) if (u.created) writeTargetKey(repo, u.created);
  repo.write(file, bytes);

  for (const w of [...maker.warnings(), ...warnings]) io.stderr.write(`${w}\n`);
  const format = ageFormat(bytes)!;
  if (values.json) {
    io.stdout.write(
      JSON.stringify({
        secret: name,
        file,
        format,
        bytes: bytes.length,
        replaced,
        targets: uses.map((u) => ({
          target: u.target,
          recipient: u.recipient,
          created: !!u.created,
          readers: u.created ? u.created.readers.map((r) => r.device) : (u.readers ?? null),
          operators: u.created ? u.created.operators.length : (u.operators ?? null),
        })),
        refusedCertificates: maker.refused(),
      }) + '\n',
    );
    return EXIT.OK;
  }
  const lines = [`${replaced ? 'replaced' : 'wrote'} ${file} (${format}, ${bytes.length} bytes): readable by target${uses.length === 1 ? '' : 's'} ${uses.map((u) => u.target).join(', ')}`];
  for (const u of uses) {
    const readers = u.created ? u.created.readers.map((r) => r.device) : u.readers;
    const operators = u.created ? u.created.operators.length : u.operators;
    const who = `readers: ${readers === undefined ? 'not stated' : readers.length ? readers.join(', ') : 'none'}; operators: ${operators ?? 'not stated'}`;
    if (u.created) lines.push(`  new key for target ${u.target}: ${targetKeyPath(u.target)}, ${recipientsPath(u.target)} (recipient ${u.recipient}); ${who}`);
    else lines.push(`  target ${u.target}: recipient ${u.recipient}; ${who}`);
  }
  lines.push(SIGN_REMINDER);
  io.stdout.write(lines.join('\n') + '\n');
  return EXIT.OK;
}
