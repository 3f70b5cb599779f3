// `keystonectl apply-dry PLAN`: load, validate and print the reconcile; changes nothing. `--fleet`: apply-dry-fleet.ts.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { actualFromDesired, diff, EMPTY_ACTUAL, type ActualState } from '../../core/diff.js';
import { hostPolicyFacts } from '../../runtime/policy-host.js';
import { AGENT_OPTIONS, agentClient } from '../agent-client.js';
import { DEFAULT_AGENT_URL, DEFAULT_STATE_DIR } from '../agent-token.js';
import { DirectoryReader } from '../../source/directory-reader.js';
import { TrustError } from '../../trust/trust-error.js';
import { loadRevision } from '../../load/load-revision.js';
import { agentActualState, refusedByAgentPolicy } from './agent-actual-state.js';
import { applyDryFleet } from './apply-dry-fleet.js';
import { dryRunKeys, withDryRunDigests } from '../dry-run-secrets.js';
import { operatorIdentity } from '../../secrets/operator-identity.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { renderDiagnosticsText } from '../render/diagnostics-text.js';
import {
  renderDiagnosticsMarkdown,
  renderReconcileMarkdown,
  renderRefusalMarkdown,
} from '../render/reconcile-markdown.js';
import { renderReconcileText } from '../render/reconcile-text.js';
import { renderPolicyRefusalMarkdown, renderPolicyRefusalText } from '../render/policy-refusal.js';
import { renderPermissionsMarkdown, renderPermissionsText } from '../render/device-permissions.js';
import {
  describePolicyFlags,
  devicePolicyArg,
  memoizedHost,
  PERMISSION_OPTIONS,
  PERMISSION_USAGE,
  permissionsOf,
  refusedByPolicy,
} from './apply-dry-permissions.js';
import { planPathIn, repoRoot } from '../repository-args.js';
import { describeVerification, TRUST_OPTIONS, TRUST_USAGE, trustPolicy } from '../trust-args.js';

export const APPLY_DRY_USAGE =
  `keystonectl apply-dry PLAN [--repo DIR] ${TRUST_USAGE} [--empty | --base REF | --agent URL] [--token TOKEN] [--state-dir DIR] [--identity FILE] ${PERMISSION_USAGE} [--json] [--format text|markdown]\n` +
  `      keystonectl apply-dry --fleet [--repo DIR] ${TRUST_USAGE} [--empty | --base REF] [--identity FILE] ${PERMISSION_USAGE} [--json] [--format text|markdown]`;

type ComparedWith =
  | { kind: 'empty'; note?: string }
  | { kind: 'agent'; url: string }
  | { kind: 'base'; ref: string; commit: string; planPresent: boolean };

export async function applyDry(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      repo: { type: 'string' },
      json: { type: 'boolean', default: false },
      format: { type: 'string', default: 'text' },
      empty: { type: 'boolean', default: false },
      base: { type: 'string' },
      fleet: { type: 'boolean', default: false },
      // An operator's age identity (SPEC §16): secrets it can open are compared by value, the rest by ciphertext.
      identity: { type: 'string' },
      ...AGENT_OPTIONS,
      ...TRUST_OPTIONS,
      // The device to refuse as (--device-policy with the agent's --allow-* flags): apply-dry-permissions.ts.
      ...PERMISSION_OPTIONS,
    },
  });
  if (values.format !== 'text' && values.format !== 'markdown')
    throw new UsageError(`--format must be text or markdown, not "${values.format}"`);
  const devicePolicy = devicePolicyArg(values);
  if (values.fleet) {
    if (positionals.length) throw new UsageError('--fleet dry-runs every target of fleet.toml: give no PLAN');
    // A device's agent runs one target's plan: comparing every target with it would be wrong for all but one.
    const agentFlag = (['agent', 'token', 'state-dir'] as const).find((k) => values[k] !== undefined);
    if (agentFlag)
      throw new UsageError(
        `--${agentFlag} excludes --fleet (a device's agent is one target): compare the fleet with --base REF or --empty`,
      );
    if (values.empty && values.base !== undefined) throw new UsageError('--empty and --base exclude each other');
    return applyDryFleet(values, io, devicePolicy);
  }
  if (positionals.length !== 1) throw new UsageError('apply-dry takes exactly one PLAN (or --fleet)');
  if ([values.empty, values.base !== undefined, values.agent !== undefined].filter(Boolean).length > 1)
    throw new UsageError('--empty, --base and --agent exclude each other');
  const root = repoRoot(io.cwd, values.repo);
  const plan = planPathIn(root, positionals[0]!);
  const markdown = values.format === 'markdown';
  const policy = trustPolicy(values, io);

  // 1. The desired side: the repository as it is on disk, verified before any TOML is parsed.
  // A refusal is still a report for a pull request: in markdown it goes to stdout too (main prints it and exits 2).
  const refused =
    (base?: string) =>
    (e: unknown): never => {
      if (markdown && e instanceof TrustError)
        io.stdout.write(renderRefusalMarkdown(plan, e, base === undefined ? {} : { base }));
      throw e;
    };
  const head = await policy.open(new DirectoryReader(root)).catch(refused());
  if (head.verification.unsigned)
    io.stderr.write(`keystonectl apply-dry: WARNING: ${describeVerification(head.verification)}\n`);
  const loaded = await loadRevision(head.reader, plan);
  const secretKeys = dryRunKeys(root, operatorIdentity(values.identity, io.env, io.cwd));
  const desired = loaded.ok
    ? { ...loaded, state: await withDryRunDigests(head.reader, loaded.state, secretKeys) }
    : loaded;
  if (!desired.ok) {
    if (values.json)
      io.stdout.write(
        JSON.stringify({ error: { code: 'KS_INVALID_REVISION', plan, diagnostics: desired.diagnostics } }, null, 2) +
          '\n',
      );
    else if (markdown) io.stdout.write(renderDiagnosticsMarkdown(plan, desired.diagnostics));
    else io.stderr.write(renderDiagnosticsText(plan, desired.diagnostics));
    return EXIT.BAD_INPUT;
  }

  // 1b. What the change asks of a device beyond the safe defaults, by the agent's own check; with --device-policy, a
  // device with those flags refuses it here as its agent would (the same codes and messages), before any comparison.
  const policyHost = memoizedHost(
    hostPolicyFacts({ stateDir: resolve(io.cwd, values['state-dir'] ?? DEFAULT_STATE_DIR) }),
  );
  if (devicePolicy) {
    const problems = refusedByPolicy(desired.state.components, devicePolicy, policyHost);
    if (problems.length) {
      const flags = describePolicyFlags(devicePolicy);
      if (values.json)
        io.stdout.write(
          JSON.stringify({ error: { code: 'KS_NOT_PERMITTED', plan, devicePolicy: flags, problems } }, null, 2) + '\n',
        );
      else if (markdown) io.stdout.write(renderPolicyRefusalMarkdown(plan, { flags }, problems));
      else io.stderr.write(renderPolicyRefusalText(plan, { flags }, problems));
      return EXIT.BAD_INPUT;
    }
  }
  const permissions = permissionsOf(desired.state.components, policyHost);

  // 2. The side it is compared with: a Git ref, the empty state, or (the default) the local agent when one answers.
  let actual: ActualState = EMPTY_ACTUAL;
  let comparedWith: ComparedWith = { kind: 'empty' };
  let comparedText = 'the empty state (a fresh device)';
  let comparedMd = 'the empty state (a fresh device)';
  if (!values.empty && values.base === undefined) {
    const url = values.agent ?? DEFAULT_AGENT_URL;
    const client = agentClient(values, io);
    const running = await agentActualState(client, url, values.agent !== undefined);
    if (running) {
      // What this device allows (SPEC §5): a plan it would refuse is said now, before it is pushed.
      const problems = await refusedByAgentPolicy(
        client,
        desired.state,
        resolve(io.cwd, values['state-dir'] ?? DEFAULT_STATE_DIR),
      );
      if (problems.length) {
        if (values.json)
          io.stdout.write(
            JSON.stringify({ error: { code: 'KS_NOT_PERMITTED', plan, agent: url, problems } }, null, 2) + '\n',
          );
        else if (markdown) io.stdout.write(renderPolicyRefusalMarkdown(plan, { agentUrl: url }, problems));
        else io.stderr.write(renderPolicyRefusalText(plan, { agentUrl: url }, problems));
        return EXIT.BAD_INPUT;
      }
      actual = running;
      comparedWith = { kind: 'agent', url };
      comparedText = comparedMd = `the running agent at ${url} (${running.components.length} components)`;
    } else {
      comparedWith = { kind: 'empty', note: `no agent answered at ${url}` };
      comparedText = comparedMd = `the empty state (a fresh device; no agent answered at ${url})`;
    }
  }
  if (values.base !== undefined) {
    // isomorphic-git costs ~100 ms to load: only when a base is asked for.
    const { GitTreeReader } = await import('../../source/git-tree-reader.js');
    const reader = await GitTreeReader.open(root, values.base);
    const baseReader = (await policy.open(reader).catch(refused(values.base))).reader;
    const baseLoaded = await loadRevision(baseReader, plan);
    const base = baseLoaded.ok
      ? { ...baseLoaded, state: await withDryRunDigests(baseReader, baseLoaded.state, secretKeys) }
      : baseLoaded;
    const missing =
      !base.ok &&
      base.diagnostics.length === 1 &&
      base.diagnostics[0]!.code === 'KS_FILE_NOT_FOUND' &&
      base.diagnostics[0]!.file === plan &&
      base.diagnostics[0]!.path === '';
    if (!base.ok && !missing) {
      const subject = `${plan} at ${reader.label} (the base)`;
      if (values.json)
        io.stdout.write(
          JSON.stringify(
            { error: { code: 'KS_INVALID_BASE', plan, base: values.base, diagnostics: base.diagnostics } },
            null,
            2,
          ) + '\n',
        );
      else if (markdown) io.stdout.write(renderDiagnosticsMarkdown(plan, base.diagnostics, { base: values.base }));
      else io.stderr.write(renderDiagnosticsText(subject, base.diagnostics));
      return EXIT.BAD_INPUT;
    }
    if (base.ok) actual = actualFromDesired(base.state);
    comparedWith = { kind: 'base', ref: values.base, commit: reader.commit, planPresent: !missing };
    comparedText = `${reader.label}${missing ? `, where ${plan} does not exist yet` : ''}`;
    comparedMd = `\`${values.base}\` (\`${reader.commit.slice(0, 7)}\`)${missing ? `, where \`${plan}\` does not exist yet` : ''}`;
  }

  // 3. The pure reconcile, rendered.
  const result = diff(desired.state, actual);
  // A device keys its secrets' digests with its own identity: against its agent, a component reading one always looks
  // changed. Said, rather than left to look like a restart (SPEC §16).
  const readers =
    comparedWith.kind === 'agent' ? desired.state.components.filter((c) => c.secrets?.length).map((c) => c.name) : [];
  const secretsNote = readers.length
    ? `note: ${readers.join(', ')} read${readers.length === 1 ? 's' : ''} secrets, whose digests the device keys with its own identity: against the agent a dry run cannot tell whether their values changed (compare with --base REF)`
    : undefined;
  if (secretsNote && !values.json) io.stderr.write(`${secretsNote}\n`);
  if (values.json) {
    const { reasonCodes: _codes, ...plain } = result;
    io.stdout.write(
      JSON.stringify(
        {
          plan,
          repo: root,
          signature: head.verification,
          comparedWith,
          ...plain,
          permissions,
          ...(secretsNote && { notes: [secretsNote] }),
        },
        null,
        2,
      ) + '\n',
    );
  } else if (markdown)
    io.stdout.write(
      renderReconcileMarkdown(result, plan, comparedMd, describeVerification(head.verification)) +
        renderPermissionsMarkdown(permissions),
    );
  else
    io.stdout.write(
      renderReconcileText(
        result,
        `apply-dry ${plan} against ${comparedText}; nothing was changed\n${describeVerification(head.verification)}`,
      ) + renderPermissionsText(permissions),
    );
  return EXIT.OK;
}
