// `keystonectl secret rekey --target T`: after an enrolment or a revocation, a new key for target T, wrapped to T's
// current devices and the operators, and every secret the old key opens re-encrypted to it (SPEC §16). It needs the
// old key, so an operator identity that opens secrets/keys/T.age (its recipient in secrets/operators.txt when the
// key was made). A secret also encrypted to a recipient the operator cannot identify (a target whose key they cannot
// open, a stranger) is refused, not quietly dropped from it: everything is decided before the first file is written.
import { parseArgs } from 'node:util';
import { recipientStanzas } from '../../secrets/age-header.js';
import { ageFormat, decryptWith, encryptTo } from '../../secrets/age-codec.js';
import { IDENTITY_HINT, operatorIdentity } from '../../secrets/operator-identity.js';
import { parseRecipientsFile } from '../../secrets/recipients-file.js';
import { SecretError } from '../../secrets/secret-error.js';
import { OPERATORS_FILE, recipientsPath, secretPath, targetKeyPath } from '../../secrets/secret-paths.js';
import { SecretsRepo } from '../../secrets/secrets-repo.js';
import { openTargetKey, openTargetKeys, writeTargetKey } from '../../secrets/target-key.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { repoRoot } from '../repository-args.js';
import { checkTargets, enrollmentKeysFrom, SIGN_REMINDER } from '../secret-args.js';
import { TargetKeyMaker } from '../target-key-maker.js';

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
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values.target === undefined) throw new UsageError('--target T is required: the fleet.toml target to give a new key');
  if (!values['enrollment-key']?.length) throw new UsageError('--enrollment-key PUB is required: the new key goes to the devices whose certificates it verifies');
  const repo = new SecretsRepo(repoRoot(io.cwd, values.repo));
  const fleet = await repo.fleet();
  const [target] = checkTargets([values.target], fleet) as [string];
  const enrollmentKeys = enrollmentKeysFrom(values['enrollment-key'], io.cwd);
  const keyFile = targetKeyPath(target);
  const recFile = recipientsPath(target);

  // 1. The old key, when there is one: without it the secrets cannot be re-encrypted.
  const oldKeyBytes = await repo.read(keyFile);
  const operator = operatorIdentity(values.identity, io.env, io.cwd);
  let oldKey: { identity: string; recipient: string } | undefined;
  if (mode === 'rewrap' && !oldKeyBytes) throw new SecretError('KS_SECRET_MISSING', `target ${target} has no key yet (${keyFile}) to rewrap: keystonectl secret rekey --target ${target} makes one`, keyFile);
  if (oldKeyBytes) {
    if (!operator)
      throw new SecretError('KS_SECRET_OPERATOR', `${mode === 'rekey' ? `rekeying target ${target} re-encrypts its secrets, which needs` : `rewrapping target ${target}'s key needs`} its current key (${keyFile}): ${IDENTITY_HINT}`, keyFile);
    oldKey = await openTargetKey(operator.identities, oldKeyBytes, keyFile);
    if (!oldKey)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        `your identity (${operator.source}, recipient ${operator.recipients.join(', ')}) cannot open ${keyFile}: it is encrypted to target ${target}'s devices and to the operators ${OPERATORS_FILE} listed when it was made. ` +
          `An operator who was listed then must rekey (after adding your recipient to ${OPERATORS_FILE}, their rekey makes a key you open too)`,
        keyFile,
      );
  }
  let before: string[] | undefined;
  try {
    const text = await repo.readText(recFile);
    if (text !== undefined) before = parseRecipientsFile(text, recFile).readers;
  } catch {
    // A damaged recipients file is what a rekey replaces: who read before is then unknown.
  }

  // 2. The new key (a rewrap: the same one), and every secret of the old one re-encrypted, in memory.
  const maker = new TargetKeyMaker(repo, fleet, enrollmentKeys, nowMs(io));
  const newKey = await maker.make(target, mode === 'rewrap' ? oldKey : undefined);
  if (mode === 'rewrap') {
    const lost = before === undefined ? undefined : before.filter((d) => !newKey.readers.some((r) => r.device === d));
    if (lost === undefined || lost.length)
      throw new SecretError(
        'KS_SECRET_OPERATOR',
        lost === undefined
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
      const out = await encryptTo([newKey.recipient, ...alsoFor.map((a) => a.recipient)], plain, { binary: ageFormat(bytes) === 'binary' });
      plain.fill(0);
      rewritten.push({ name, bytes: out, alsoFor: alsoFor.map((a) => a.target) });
    }
  }
  if (problems.length) throw new SecretError('KS_SECRET_OPERATOR', `rekey of target ${target} refused, nothing was written:\n  ${problems.join('\n  ')}`, keyFile);

  // 3. Write: the key first, so that no secret is ever encrypted to a key the repository does not hold.
  writeTargetKey(repo, newKey);
  for (const r of rewritten) repo.write(secretPath(r.name), r.bytes);

  for (const w of maker.warnings()) io.stderr.write(`${w}\n`);
  const readers = newKey.readers.map((r) => r.device);
  const added = before === undefined ? undefined : readers.filter((d) => !before.includes(d));
  const removed = before === undefined ? undefined : before.filter((d) => !readers.includes(d));
  if (values.json) {
    io.stdout.write(
      JSON.stringify({
        target,
        recipient: newKey.recipient,
        previousRecipient: oldKey?.recipient ?? null,
        created: !oldKey,
        rewrapped: mode === 'rewrap',
        readers,
        added: added ?? null,
        removed: removed ?? null,
        operators: newKey.operators.length,
        reencrypted: rewritten.map((r) => r.name),
        refusedCertificates: maker.refused(),
      }) + '\n',
    );
    return EXIT.OK;
  }
  const change = added === undefined ? ' (who read before is not stated)' : added.length || removed!.length ? ` (added: ${added.join(', ') || 'none'}; removed: ${removed!.join(', ') || 'none'})` : ' (unchanged)';
  const lines = [
    mode === 'rewrap'
      ? `rewrapped target ${target}'s key (recipient ${newKey.recipient}, unchanged) to its current devices; ${keyFile}, ${recFile}`
      : `${oldKey ? 'rekeyed' : 'made a key for'} target ${target}: recipient ${newKey.recipient}${oldKey ? ` (was ${oldKey.recipient})` : ''}; ${keyFile}, ${recFile}`,
    `  readers: ${readers.join(', ') || 'none'}${change}`,
    `  operators: ${newKey.operators.length}`,
    ...(mode === 'rewrap' ? [] : [`  re-encrypted ${rewritten.length} secret${rewritten.length === 1 ? '' : 's'}${rewritten.length ? `: ${rewritten.map((r) => (r.alsoFor.length ? `${r.name} (also for ${r.alsoFor.join(', ')})` : r.name)).join(', ')}` : ''}`]),
  ];
  if (removed?.length) lines.push(`note: ${removed.join(', ')} could read these values until now, and Git keeps the old files: set new values for what they must no longer know`);
  lines.push(SIGN_REMINDER);
  io.stdout.write(lines.join('\n') + '\n');
  return EXIT.OK;
}
