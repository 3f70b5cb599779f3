// `keystonectl secret rekey --target T`: after an enrolment or a revocation, a new key for target T, wrapped to T's
// current devices and the operators, and every secret the old key opens re-encrypted to it (SPEC §16). It needs the
// old key, so an operator identity that opens secrets/keys/T.age (its recipient in secrets/operators.txt when the
// key was made). A secret also encrypted to a recipient the operator cannot identify (a target whose key they cannot
// open, a stranger) is refused, not quietly dropped from it: everything is decided before the first file is written.
// SHA256SUMS's signature is verified first (secret-trust.ts), and the old key file must be the signed one: a key
// planted by whoever can push, opened and re-wrapped, would be a key they know.
import { parseArgs } from 'node:util';
import { recipientStanzas } from '../../secrets/age-header.js';
import { ageFormat, decryptWith, encryptTo } from '../../secrets/age-codec.js';
import { IDENTITY_HINT, operatorIdentity } from '../../secrets/operator-identity.js';
import { parseRecipientsFile, type RecipientsFile } from '../../secrets/recipients-file.js';
import { SecretError } from '../../secrets/secret-error.js';
import { OPERATORS_FILE, recipientsPath, secretPath, targetKeyPath } from '../../core/secret-paths.js';
import { reviewAndSign, SecretsRepo } from '../../secrets/secrets-repo.js';
import { openTargetKey, openTargetKeys, writeTargetKey } from '../../secrets/target-key.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { repoRoot } from '../repository-args.js';
import { checkTargets, enrollmentKeysFrom, SIGN_REMINDER } from '../secret-args.js';
import { verifySecretInputs } from '../secret-trust.js';
import { TargetKeyMaker, wrapChange, wrapLines, type Before } from '../target-key-maker.js';
import { TRUST_OPTIONS } from '../trust-args.js';

export async function secretRekey(argv: string[], io: CliIo): Promise<number> {
  return rekeyOrRewrap(argv, io, 'rekey');
}

/**
 * `keystonectl secret rewrap --target T`: after an enrolment, the same key of T wrapped to T's current devices and
 * the operators — one small file rewritten, no secret re-encrypted. Refused when a device would lose the key: it
 * knows the key already, so only a rekey (a new key) cuts it off.
 */
export async function secretRewrap(argv: string[], io: CliIo): Promise<number> {
  return rekeyOrRewrap(argv, io, 'rewrap');
}

async function rekeyOrRewrap(argv: string[], io: CliIo, mode: 'rekey' | 'rewrap'): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      target: { type: 'string' },
      repo: { type: 'string' },
      identity: { type: 'string' },
      'enrollment-key': { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
      ...TRUST_OPTIONS,
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values.target === undefined)
    throw new UsageError('--target T is required: the fleet.toml target to give a new key');
  if (!values['enrollment-key']?.length)
    throw new UsageError(
      '--enrollment-key PUB is required: the new key goes to the devices whose certificates it verifies',
    );
  const repo = new SecretsRepo(repoRoot(io.cwd, values.repo));
  await verifySecretInputs(repo, values, io, mode);
  const fleet = await repo.fleet();
  const [target] = checkTargets([values.target], fleet) as [string];
  const enrollmentKeys = enrollmentKeysFrom(values['enrollment-key'], io.cwd);
  const keyFile = targetKeyPath(target);
  const recFile = recipientsPath(target);

  // 1. The old key, when there is one: without it the secrets cannot be re-encrypted. Only the signed one.
  const oldKeyBytes = await repo.readSigned(
    keyFile,
    `it is target ${target}'s key, which a ${mode} opens and ${mode === 'rekey' ? 're-encrypts the secrets of' : 'wraps to the devices again'}`,
  );
  const operator = operatorIdentity(values.identity, io.env, io.cwd);
  const maker = new TargetKeyMaker(repo, fleet, enrollmentKeys, nowMs(io));
  let oldKey: { identity: string; recipient: string } | undefined;
  if (mode === 'rewrap' && !oldKeyBytes)
    throw new SecretError(
      'KS_SECRET_MISSING',
      `target ${target} has no key yet (${keyFile}) to rewrap: keystonectl secret rekey --target ${target} makes one`,
      keyFile,
    );
  if (oldKeyBytes) {
    if (!operator)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `${mode === 'rekey' ? `rekeying target ${target} re-encrypts its secrets, which needs` : `rewrapping target ${target}'s key needs`} its current key (${keyFile}): ${IDENTITY_HINT}`,
        keyFile,
      );
    oldKey = await openTargetKey(operator.identities, oldKeyBytes, keyFile);
    if (!oldKey) {
      // The signed operators file (an unsigned one says nothing either way: it is refused below when a key is made).
      const operators = await maker.operators().catch(() => [] as string[]);
      const listed = operator.recipients.find((r) => operators.includes(r));
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `your identity (${operator.source}, recipient ${operator.recipients.join(', ')}) cannot open ${keyFile}: it is encrypted to target ${target}'s devices and to the operators ${OPERATORS_FILE} listed when it was made. ` +
          (listed !== undefined
            ? `Your recipient is in ${OPERATORS_FILE} now, so the key was made before it was added: an operator who opens it runs keystonectl secret rewrap --target ${target}, and then you can`
            : `An operator who was listed then must rekey (after adding your recipient to ${OPERATORS_FILE} and signing it, their rekey makes a key you open too)`),
        keyFile,
      );
    }
  }
  // Who read before, from the recipients file: only the signed one says. A rewrap relies on it (a device it named and
  // the new readers lack knows the key), a rekey only reports it.
  const recBytes = await repo.read(recFile);
  const recProblem = repo.signedProblem(recFile, recBytes);
  if (mode === 'rewrap' && recProblem)
    throw new SecretError(
      'KS_SECRET_OPERATOR',
      `${recProblem}, and a rewrap relies on the devices it names (one dropped from it would keep a key it knows). ${reviewAndSign(recFile)}`,
      recFile,
    );
  let before: RecipientsFile | undefined;
  if (recBytes && !recProblem) {
    try {
      before = parseRecipientsFile(new TextDecoder().decode(recBytes), recFile);
    } catch {
      // A damaged recipients file is what a rekey replaces: who read before is then unknown.
    }
  }
  const was: Before = recBytes ? before : 'new';

  // 2. The new key (a rewrap: the same one), and every secret of the old one re-encrypted, in memory.
  const newKey = await maker.make(target, mode === 'rewrap' ? oldKey : undefined);
  const change = wrapChange(newKey, was);
  if (mode === 'rewrap') {
    const lost = change.readersRemoved;
    if (lost === null || lost.length)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        lost === null
          ? `${recFile} does not say who reads target ${target}'s key now: a rewrap could drop a device that knows the key; keystonectl secret rekey --target ${target} gives a new one`
          : `a rewrap of target ${target} would drop ${lost.join(', ')} (revoked, re-labelled, or gone), who knows its key already: keystonectl secret rekey --target ${target} gives a new key instead`,
        keyFile,
      );
  }
  const rewritten: { name: string; bytes: Uint8Array; alsoFor: string[] }[] = [];
  const problems: string[] = [];
  if (oldKey && operator && mode === 'rekey') {
    const others = await openTargetKeys(repo, operator.identities);
    others.opened.delete(target);
    const unopened = others.unopened.filter((t) => t !== target);
    for (const name of repo.secretNames()) {
      const file = secretPath(name);
      const bytes = await repo.read(file);
      if (!bytes) continue;
      let plain: Uint8Array | undefined;
      const alsoFor: { target: string; recipient: string }[] = [];
      try {
        plain = await decryptWith([oldKey.identity], bytes);
        if (!plain) continue;
        for (const [t, k] of others.opened) {
          const p = await decryptWith([k.identity], bytes);
          if (p) alsoFor.push({ target: t, recipient: k.recipient });
          p?.fill(0);
        }
      } catch (e) {
        problems.push(`${file}: ${(e as Error).message}`);
        continue;
      }
      const stanzas = recipientStanzas(bytes) ?? [];
      const known = 1 + alsoFor.length;
      if (stanzas.length > known || stanzas.some((t) => t !== 'X25519')) {
        problems.push(
          `secret ${name} (${file}) is encrypted to ${stanzas.length} recipients, and ${known === 1 ? 'one is a target' : `${known} are targets`} you can open (${[target, ...alsoFor.map((a) => a.target)].join(', ')}): ` +
            `re-encrypting would drop the others${unopened.length ? ` (target keys your identity cannot open: ${unopened.join(', ')})` : ''}; ` +
            `rekey with an identity that opens them, or set the secret again for the targets it is meant for`,
        );
        plain.fill(0);
        continue;
      }
      const out = await encryptTo([newKey.recipient, ...alsoFor.map((a) => a.recipient)], plain, {
        binary: ageFormat(bytes) === 'binary',
      });
      plain.fill(0);
      rewritten.push({ name, bytes: out, alsoFor: alsoFor.map((a) => a.target) });
    }
  }
  if (problems.length)
    throw new SecretError(
      'KS_SECRET_OPERATOR',
      `rekey of target ${target} refused, nothing was written:\n  ${problems.join('\n  ')}`,
      keyFile,
    );

  // 3. Who the key goes to, against the recipients file, before anything is written.
  if (!values.json) {
    const what =
      mode === 'rewrap'
        ? `target ${target}'s key (recipient ${newKey.recipient}, unchanged) goes to:`
        : `target ${target}'s new key (recipient ${newKey.recipient}) goes to:`;
    io.stdout.write([what, ...wrapLines(change, was)].join('\n') + '\n');
    if (recProblem)
      io.stderr.write(
        `warning: ${recProblem}: who read target ${target}'s key before is not known (the new ${recFile} replaces it)\n`,
      );
  }

  // 4. Write: the key first, so that no secret is ever encrypted to a key the repository does not hold.
  writeTargetKey(repo, newKey);
  for (const r of rewritten) repo.write(secretPath(r.name), r.bytes);

  for (const w of maker.warnings()) io.stderr.write(`${w}\n`);
  const { readers, readersAdded: added, readersRemoved: removed } = change;
  if (values.json) {
    io.stdout.write(
      JSON.stringify({
        target,
        recipient: newKey.recipient,
        previousRecipient: oldKey?.recipient ?? null,
        created: !oldKey,
        rewrapped: mode === 'rewrap',
        readers,
        added: recBytes ? added : null,
        removed: recBytes ? removed : null,
        operators: newKey.operators.length,
        operatorRecipients: newKey.operators,
        operatorsAdded: recBytes ? change.operatorsAdded : null,
        operatorsRemoved: recBytes ? change.operatorsRemoved : null,
        reencrypted: rewritten.map((r) => r.name),
        refusedCertificates: maker.refused(),
      }) + '\n',
    );
    return EXIT.OK;
  }
  const lines = [
    mode === 'rewrap'
      ? `rewrapped target ${target}'s key (recipient ${newKey.recipient}, unchanged) to its current devices; ${keyFile}, ${recFile}`
      : `${oldKey ? 'rekeyed' : 'made a key for'} target ${target}: recipient ${newKey.recipient}${oldKey ? ` (was ${oldKey.recipient})` : ''}; ${keyFile}, ${recFile}`,
    ...(mode === 'rewrap'
      ? []
      : [
          `  re-encrypted ${rewritten.length} secret${rewritten.length === 1 ? '' : 's'}${rewritten.length ? `: ${rewritten.map((r) => (r.alsoFor.length ? `${r.name} (also for ${r.alsoFor.join(', ')})` : r.name)).join(', ')}` : ''}`,
        ]),
  ];
  if (removed?.length)
    lines.push(
      `note: ${removed.join(', ')} could read these values until now, and Git keeps the old files: set new values for what they must no longer know`,
    );
  lines.push(SIGN_REMINDER);
  io.stdout.write(lines.join('\n') + '\n');
  return EXIT.OK;
}
