// `keystonectl secret ls`: every secret of the repository, the targets that read it and the devices of each, which
// recipes and plans use it, and the secrets they use that are not there (SPEC §16). Never a value: which targets
// read a secret is found by opening each with the target keys the operator's identity opens, and nothing decrypted
// leaves this function. Without an operator identity the targets are unknown (an age header does not say).
import { parseArgs } from 'node:util';
import { FLEET_FILE } from '../../core/fleet.js';
import { recipientStanzas } from '../../secrets/age-header.js';
import { ageFormat, decryptWith } from '../../secrets/age-codec.js';
import { IDENTITY_HINT, operatorIdentity } from '../../secrets/operator-identity.js';
import { parseRecipientsFile, type RecipientsFile } from '../../secrets/recipients-file.js';
import { secretReferences } from '../../secrets/secret-references.js';
import { recipientsPath, secretPath, targetKeyPath } from '../../core/secret-paths.js';
import { SecretsRepo } from '../../secrets/secrets-repo.js';
import { openTargetKeys } from '../../secrets/target-key.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { repoRoot } from '../repository-args.js';

interface SecretRow {
  name: string;
  file: string;
  format: 'armored' | 'binary' | null;
  bytes: number;
  /** Recipient stanzas in the header (one per target it was encrypted to, when made by keystonectl or age -R). */
  recipients: number | null;
  /** null: unknown (no operator identity). */
  targets: string[] | null;
  /** Recipients that are none of the targets the operator opened. */
  otherRecipients: number | null;
  usedBy: string[];
  problem?: string;
}

interface TargetRow {
  name: string;
  inFleet: boolean;
  recipient: string | null;
  readers: string[] | null;
  operators: number | null;
  keyFile: boolean;
  /** Whether the operator's identity opens its key file; null without an identity or a key file. */
  opened: boolean | null;
  problem?: string;
}

export async function secretLs(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { repo: { type: 'string' }, identity: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const repo = new SecretsRepo(repoRoot(io.cwd, values.repo));
  const operator = operatorIdentity(values.identity, io.env, io.cwd);

  // The targets: those of fleet.toml, and those with files under secrets/ (a target since renamed shows too).
  let fleetTargets: string[] = [];
  let fleetProblem: string | undefined;
  try {
    fleetTargets = (await repo.fleet()).targets.map((t) => t.name);
  } catch (e) {
    fleetProblem = (e as Error).message.split('\n')[0];
  }
  const withFiles = repo.targetsWithFiles();
  const keys = operator ? await openTargetKeys(repo, operator.identities) : undefined;
  const targetRows: TargetRow[] = [];
  const described = new Map<string, RecipientsFile>();
  for (const name of [...new Set([...fleetTargets, ...withFiles.keys, ...withFiles.recipients])].sort()) {
    const row: TargetRow = {
      name,
      inFleet: fleetTargets.includes(name),
      recipient: null,
      readers: null,
      operators: null,
      keyFile: withFiles.keys.includes(name),
      opened: null,
    };
    if (withFiles.recipients.includes(name)) {
      try {
        const text = await repo.readText(recipientsPath(name));
        if (text !== undefined) {
          const rec = parseRecipientsFile(text, recipientsPath(name));
          described.set(name, rec);
          Object.assign(row, {
            recipient: rec.recipient,
            readers: rec.readers ?? null,
            operators: rec.operators ?? null,
          });
        }
      } catch (e) {
        row.problem = (e as Error).message;
      }
    }
    if (keys && row.keyFile) row.opened = keys.opened.has(name);
    targetRows.push(row);
  }

  // The secrets: what each header says, and which opened target key opens each.
  const refs = await secretReferences(repo);
  const secretRows: SecretRow[] = [];
  for (const name of repo.secretNames()) {
    const file = secretPath(name);
    const row: SecretRow = {
      name,
      file,
      format: null,
      bytes: 0,
      recipients: null,
      targets: null,
      otherRecipients: null,
      usedBy: refs.get(name) ?? [],
    };
    secretRows.push(row);
    let bytes: Uint8Array | undefined;
    try {
      bytes = await repo.read(file);
    } catch (e) {
      row.problem = (e as Error).message;
      continue;
    }
    if (!bytes) continue;
    row.bytes = bytes.length;
    row.format = ageFormat(bytes) ?? null;
    const stanzas = recipientStanzas(bytes);
    if (!row.format || !stanzas) {
      row.problem = 'not an age file';
      continue;
    }
    row.recipients = stanzas.length;
    if (!keys) continue;
    const targets: string[] = [];
    try {
      for (const [target, key] of keys.opened) {
        const plain = await decryptWith([key.identity], bytes);
        if (plain) targets.push(target);
        plain?.fill(0);
      }
    } catch (e) {
      row.problem = (e as Error).message;
      continue;
    }
    row.targets = targets;
    row.otherRecipients = stanzas.length - targets.length;
  }
  const present = new Set(secretRows.map((s) => s.name));
  const missing = [...refs].filter(([name]) => !present.has(name)).map(([name, usedBy]) => ({ name, usedBy }));

  if (values.json) {
    io.stdout.write(
      JSON.stringify(
        {
          repo: repo.root,
          identity: operator ? { source: operator.source, recipients: operator.recipients } : null,
          secrets: secretRows,
          missing,
          targets: targetRows,
          ...(fleetProblem !== undefined && { fleetProblem }),
          ...(keys && { unopenedTargets: keys.unopened }),
        },
        null,
        2,
      ) + '\n',
    );
    return EXIT.OK;
  }

  const out: string[] = [];
  const readersOf = (t: string) => {
    const r = described.get(t)?.readers;
    return r === undefined ? 'readers not stated' : r.length ? r.join(', ') : 'no device';
  };
  if (!secretRows.length)
    out.push(`no secrets in ${repo.root}/secrets (keystonectl secret set NAME --target T < value)`);
  for (const s of secretRows) {
    out.push(
      `${s.name}  ${s.file}  ${s.format ?? '?'}, ${s.bytes} bytes${s.recipients !== null ? `, ${s.recipients} recipient${s.recipients === 1 ? '' : 's'}` : ''}`,
    );
    if (s.problem) out.push(`  problem: ${s.problem}`);
    else if (s.targets === null) out.push('  read by: unknown (no operator identity; see below)');
    else {
      const parts = s.targets.map((t) => `${t} (${readersOf(t)})`);
      if (s.otherRecipients)
        parts.push(
          `${s.otherRecipients} other recipient${s.otherRecipients === 1 ? '' : 's'} your identity cannot tell${keys?.unopened.length ? ` (target keys it cannot open: ${keys.unopened.join(', ')})` : ''}`,
        );
      out.push(`  read by: ${parts.length ? parts.join('; ') : 'no target whose key you can open'}`);
    }
    out.push(`  used by: ${s.usedBy.length ? s.usedBy.join(', ') : 'nothing'}`);
  }
  for (const m of missing)
    out.push(
      `missing: secret ${m.name} (used by ${m.usedBy.join(', ')}) has no ${secretPath(m.name)}: devices refuse such a revision`,
    );
  out.push('targets:');
  for (const t of targetRows) {
    const key = !t.keyFile
      ? `no key yet (keystonectl secret set NAME --target ${t.name} makes one)`
      : t.opened === null
        ? `key ${targetKeyPath(t.name)}`
        : t.opened
          ? 'key opened with your identity'
          : 'key not opened by your identity';
    const who = t.recipient
      ? `recipient ${t.recipient}; readers: ${readersOf(t.name)}; operators: ${t.operators ?? 'not stated'}; `
      : '';
    out.push(
      `  ${t.name}${t.inFleet ? '' : ` (not in ${FLEET_FILE})`}: ${who}${key}${t.problem ? `; problem: ${t.problem}` : ''}`,
    );
  }
  if (fleetProblem) out.push(`note: ${fleetProblem}`);
  if (!operator && secretRows.length) out.push(`note: which targets read each secret is unknown: ${IDENTITY_HINT}`);
  io.stdout.write(out.join('\n') + '\n');
  return EXIT.OK;
}
