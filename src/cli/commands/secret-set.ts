// `keystonectl secret set NAME --target T`: secrets/NAME.age, encrypted to the recipient of each target (SPEC §16).
// The value comes from --file or stdin, never the command line (shell history, ps), and is never printed. A target
// without a key gets one, wrapped to its enrolled devices and the operators. SHA256SUMS's signature is verified first
// (secret-trust.ts), and a target's recipients file that is not exactly the signed one is refused: whoever swapped it
// would receive the secret. So is a key this same session made, until it is signed.
import { parseArgs } from 'node:util';
import { ageFormat, encryptTo } from '../../secrets/age-codec.js';
import { operatorIdentity } from '../../secrets/operator-identity.js';
import { parseRecipientsFile } from '../../secrets/recipients-file.js';
import { SecretError } from '../../secrets/secret-error.js';
import {
  isSecretName,
  MAX_SECRET_FILE_BYTES,
  OPERATORS_FILE,
  recipientsPath,
  secretPath,
  targetKeyPath,
} from '../../core/secret-paths.js';
import { SecretsRepo } from '../../secrets/secrets-repo.js';
import { openTargetKey, writeTargetKey, type NewTargetKey } from '../../secrets/target-key.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { repoRoot } from '../repository-args.js';
import { checkTargets, enrollmentKeysFrom, readSecretValue, SIGN_REMINDER } from '../secret-args.js';
import { verifySecretInputs } from '../secret-trust.js';
import { TargetKeyMaker, wrapChange, wrapLines, type WrapChange } from '../target-key-maker.js';
import { TRUST_OPTIONS } from '../trust-args.js';

interface TargetUse {
  target: string;
  recipient: string;
  created?: NewTargetKey;
  change?: WrapChange;
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
        ...TRUST_OPTIONS,
      },
    });
  } catch (e) {
    // parseArgs names the option, never its value; say where a value does go.
    throw new UsageError(
      `${(e as Error).message.split('. ')[0]}: a secret's value comes from --file FILE or stdin, never the command line`,
    );
  }
  const { values, positionals } = parsed;
  const [name, ...extra] = positionals;
  if (name === undefined)
    throw new UsageError("secret set needs the secret's NAME: keystonectl secret set NAME --target T < value");
  // Not echoed: the extra word is most likely the value itself.
  if (extra.length)
    throw new UsageError(
      `secret set takes no value argument (${extra.length} word${extra.length === 1 ? '' : 's'} after ${name}, not shown): shell history and ps would keep it; pipe the value on stdin or give --file FILE`,
    );
  if (!isSecretName(name))
    throw new UsageError(
      `${JSON.stringify(name)} is not a secret name: letters, digits, "_" and "-", at most 63, starting with a letter or digit (it is the file secrets/NAME.age)`,
    );
  if (!values.target?.length)
    throw new UsageError('--target T is required (repeatable): the fleet.toml targets whose devices read the secret');

  const repo = new SecretsRepo(repoRoot(io.cwd, values.repo));
  await verifySecretInputs(repo, values, io, 'set');
  const fleet = await repo.fleet();
  const targets = checkTargets(values.target, fleet);
  const enrollmentKeys = enrollmentKeysFrom(values['enrollment-key'] ?? [], io.cwd);
  const operator = operatorIdentity(values.identity, io.env, io.cwd);
  const now = nowMs(io);
  const maker = new TargetKeyMaker(repo, fleet, enrollmentKeys, now);

  // 1. Every target's recipient, checked, before the value is read: a refusal costs nothing typed or piped.
  const uses: TargetUse[] = [];
  for (const target of targets) {
    const recFile = recipientsPath(target);
    const keyFile = targetKeyPath(target);
    const recBytes = await repo.read(recFile);
    const keyBytes = await repo.read(keyFile);
    if (!recBytes && !keyBytes) {
      // A target the signed set gives a key to, whose files are gone since: a new key would leave its secrets unread.
      for (const f of [recFile, keyFile]) {
        const problem = repo.signedProblem(f, undefined);
        if (problem)
          throw new SecretError(
            'KS_SECRET_OPERATOR',
            `${problem}: target ${target} had a key when the repository was signed; restore it (git checkout -- ${recFile} ${keyFile}), or make a new one with keystonectl secret rekey --target ${target}: nothing was written`,
            f,
          );
      }
      const created = await maker.make(target);
      uses.push({ target, recipient: '', created, change: wrapChange(created, 'new') });
      continue;
    }
    if (!recBytes || !keyBytes)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `target ${target} has ${recBytes ? recFile : keyFile} but no ${recBytes ? keyFile : recFile}: make both again with keystonectl secret rekey --target ${target}`,
        recBytes ? keyFile : recFile,
      );
    // The value goes to the recipient this file names: only the signed one. A key made since the last signature (by an
    // earlier `secret set` or `rekey` of this session, or by whoever can push) is not used until it is signed.
    const problem = repo.signedProblem(recFile, recBytes);
    if (problem) {
      const unlisted = !repo.isListed(recFile);
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        unlisted
          ? `${problem}, so target ${target}'s key was made since (by a secret set or rekey of yours, or by anyone who can push), and a value is encrypted only to a signed recipient. ` +
              `Sign first: review git diff and git status secrets/, keystonectl sign --key KEY, then run this again: nothing was written`
          : `${problem}, so someone changed target ${target}'s recipient (a rekey or rewrap of yours, or a swap: a swapped recipient would send the secret to whoever holds it). ` +
              `Sign first: check it (git diff ${recFile}; git log -p ${recFile}), keystonectl sign --key KEY, then run this again: nothing was written`,
        recFile,
      );
    }
    const rec = parseRecipientsFile(new TextDecoder().decode(recBytes), recFile);
    // With an identity that opens the key, the recipient is checked against the key itself: nothing else can swap it.
    if (operator) {
      const key = await openTargetKey(operator.identities, keyBytes, keyFile);
      if (key && key.recipient !== rec.recipient)
        throw new SecretError(
          'KS_SECRET_OPERATOR',
          `${recFile} names ${rec.recipient}, and target ${target}'s key (${keyFile}) is ${key.recipient}: the recipient was swapped; keystonectl secret rekey --target ${target}`,
          recFile,
        );
      if (!key) {
        // An operator's identity opens every key made since its recipient was in the (signed) operators file: one that
        // does not is a key file replaced since, or made before the operator was added.
        const operators = await maker.operators();
        const listed = operator.recipients.find((r) => operators.includes(r));
        if (listed !== undefined)
          throw new SecretError(
            'KS_SECRET_OPERATOR',
            `your identity (${operator.source}) is an operator's (${listed} is in ${OPERATORS_FILE}), yet it cannot open target ${target}'s key (${keyFile}): ` +
              `the key file was replaced since it was made (git log -p ${keyFile}), or made before your recipient was added (then an operator who opens it runs keystonectl secret rewrap --target ${target}): nothing was written`,
            keyFile,
          );
      }
    }
    uses.push({
      target,
      recipient: rec.recipient,
      ...(rec.readers && { readers: rec.readers }),
      ...(rec.operators !== undefined && { operators: rec.operators }),
    });
  }

  // 2. Who each new key goes to, against the recipients file (none: a new target), before anything is written.
  if (!values.json)
    for (const u of uses)
      if (u.created)
        io.stdout.write(
          [`new key for target ${u.target} (recipient ${u.created.recipient}):`, ...wrapLines(u.change!, 'new')].join(
            '\n',
          ) + '\n',
        );

  // 3. The value, encrypted once to every target's recipient.
  const value = await readSecretValue(values.file, io);
  for (const u of uses) if (u.created) u.recipient = u.created.recipient;
  const file = secretPath(name);
  const bytes = await encryptTo([...new Set(uses.map((u) => u.recipient))], value, { binary: values.binary });
  value.fill(0);
  if (bytes.length > MAX_SECRET_FILE_BYTES)
    throw new UsageError(
      `encrypted, the value is ${bytes.length} bytes, more than a secret's ${MAX_SECRET_FILE_BYTES}${values.binary ? '' : " (--binary saves the armor's third)"}`,
    );
  const replaced = (await repo.read(file)) !== undefined;

  // 4. Write: the new target keys first, so that no secret is ever encrypted to a key that is not in the repository.
  for (const u of uses) if (u.created) writeTargetKey(repo, u.created);
  repo.write(file, bytes);

  for (const w of maker.warnings()) io.stderr.write(`${w}\n`);
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
          readers: u.created ? u.change!.readers : (u.readers ?? null),
          operators: u.created ? u.created.operators.length : (u.operators ?? null),
          ...(u.created && { operatorRecipients: u.created.operators }),
        })),
        refusedCertificates: maker.refused(),
      }) + '\n',
    );
    return EXIT.OK;
  }
  const lines = [
    `${replaced ? 'replaced' : 'wrote'} ${file} (${format}, ${bytes.length} bytes): readable by target${uses.length === 1 ? '' : 's'} ${uses.map((u) => u.target).join(', ')}`,
  ];
  for (const u of uses) {
    const readers = u.created ? u.change!.readers : u.readers;
    const operators = u.created ? u.created.operators.length : u.operators;
    const who = `readers: ${readers === undefined ? 'not stated' : readers.length ? readers.join(', ') : 'none'}; operators: ${operators ?? 'not stated'}`;
    if (u.created)
      lines.push(
        `  new key for target ${u.target}: ${targetKeyPath(u.target)}, ${recipientsPath(u.target)} (recipient ${u.recipient}); ${who}`,
      );
    else lines.push(`  target ${u.target}: recipient ${u.recipient}; ${who}`);
  }
  if (uses.some((u) => u.created))
    lines.push(`note: a new key is used by the next secret set or rekey only once signed`);
  lines.push(SIGN_REMINDER);
  io.stdout.write(lines.join('\n') + '\n');
  return EXIT.OK;
}
