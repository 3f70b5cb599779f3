// `keystonectl apply-dry --fleet` (SPEC §13): the dry run of every fleet target's plan, with the target's config, for a
// pull request. Each target is compared with the same target (by name) at --base, or with the empty state: what a
// device of that target would do on merge. A device's running agent is one target, so --agent has no place here.
import { actualFromDesired, diff, EMPTY_ACTUAL, type Reconcile } from '../../core/diff.js';
import { CODES, type Diagnostic } from '../../core/errors.js';
import { FLEET_FILE } from '../../core/fleet.js';
import { DirectoryReader } from '../../source/directory-reader.js';
import { loadFleet, type ResolvedTarget } from '../../load/load-fleet.js';
import type { RepoReader } from '../../source/repo-reader.js';
import { dryRunKeys, withDryRunDigests } from '../dry-run-secrets.js';
import { operatorIdentity } from '../../secrets/operator-identity.js';
import { TrustError } from '../../trust/trust-error.js';
import { EXIT, type CliIo } from '../io.js';
import { renderDiagnosticsText } from '../render/diagnostics-text.js';
import { renderFleetDryMarkdown, renderFleetDryText, type FleetDry } from '../render/fleet-reconcile.js';
import { renderDiagnosticsMarkdown, renderRefusalMarkdown } from '../render/reconcile-markdown.js';
import { repoRoot } from '../repository-args.js';
import { DEFAULT_STATE_DIR } from '../agent-token.js';
import type { DevicePolicy } from '../../core/device-policy.js';
import { hostPolicyFacts } from '../../runtime/policy-host.js';
import { renderPolicyRefusalMarkdown, renderPolicyRefusalText } from '../render/policy-refusal.js';
import { renderPermissionsMarkdown, renderPermissionsText } from '../render/device-permissions.js';
import { describePolicyFlags, memoizedHost, permissionsOf, refusedByPolicy } from './apply-dry-permissions.js';
import { describeVerification, trustPolicy, type TrustValues } from '../trust-args.js';

export interface FleetDryValues extends TrustValues {
  repo?: string | undefined;
  json: boolean;
  format: string;
  empty: boolean;
  base?: string | undefined;
  /** An operator's age identity: secrets it opens are compared by value (dry-run-secrets.ts). */
  identity?: string | undefined;
}

type ComparedWith = { kind: 'empty' } | { kind: 'base'; ref: string; commit: string; fleetPresent: boolean };

/** The JSON of one reconcile: apply-dry's keys (the reason codes are internal). */
function plainReconcile(r: Reconcile): Omit<Reconcile, 'reasonCodes'> {
  const { reasonCodes: _codes, ...plain } = r;
  return plain;
}

/** Whether two targets take the same devices: equal selectors (or both none) and equal device lists, in any order. */
function sameDevices(a: ResolvedTarget, b: ResolvedTarget): boolean {
  const sel = (t: ResolvedTarget) =>
    t.target.selector
      ? JSON.stringify(Object.entries(t.target.selector).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : 'none';
  const devs = (t: ResolvedTarget) => JSON.stringify([...(t.target.devices ?? [])].sort());
  return sel(a) === sel(b) && devs(a) === devs(b);
}

/**
 * Flags were checked by apply-dry (no PLAN, no --agent, one of --empty and --base at most). `devicePolicy`: the
 * device every target is refused as (--device-policy), when given.
 */
export async function applyDryFleet(values: FleetDryValues, io: CliIo, devicePolicy?: DevicePolicy): Promise<number> {
  const root = repoRoot(io.cwd, values.repo);
  const markdown = values.format === 'markdown';
  const policy = trustPolicy(values, io);
  const invalid = (diagnostics: Diagnostic[], base?: string): number => {
    if (values.json)
      io.stdout.write(
        JSON.stringify(
          {
            error:
              base === undefined
                ? { code: 'KS_INVALID_REVISION', plan: FLEET_FILE, diagnostics }
                : { code: 'KS_INVALID_BASE', plan: FLEET_FILE, base, diagnostics },
          },
          null,
          2,
        ) + '\n',
      );
    else if (markdown)
      io.stdout.write(renderDiagnosticsMarkdown(FLEET_FILE, diagnostics, base === undefined ? {} : { base }));
    else
      io.stderr.write(
        renderDiagnosticsText(base === undefined ? FLEET_FILE : `${FLEET_FILE} at ${base} (the base)`, diagnostics),
      );
    return EXIT.BAD_INPUT;
  };
  // A refusal is still a report for a pull request: in markdown it goes to stdout too (main prints it and exits 2).
  const refused =
    (base?: string) =>
    (e: unknown): never => {
      if (markdown && e instanceof TrustError)
        io.stdout.write(renderRefusalMarkdown(FLEET_FILE, e, base === undefined ? {} : { base }));
      throw e;
    };

  // 1. The head: the repository on disk, verified once, then fleet.toml and every target's plan.
  const head = await policy.open(new DirectoryReader(root)).catch(refused());
  if (head.verification.unsigned)
    io.stderr.write(`keystonectl apply-dry: WARNING: ${describeVerification(head.verification)}\n`);
  const loaded = await loadFleet(head.reader);
  if (!loaded.ok) return invalid(loaded.diagnostics);
  // Secrets (SPEC §16): each target's components take the digests of what they read, by value or by ciphertext.
  const secretKeys = dryRunKeys(root, operatorIdentity(values.identity, io.env, io.cwd));
  const withSecrets = async (reader: RepoReader, targets: ResolvedTarget[]) => {
    for (const t of targets) t.state = await withDryRunDigests(reader, t.state, secretKeys);
  };
  await withSecrets(head.reader, loaded.targets);
  // What each target's plan asks of its devices beyond the safe defaults, by the agent's own check (the devices'
  // state directory guarded where a packaged agent keeps it); --device-policy refuses as such a device would.
  const policyHost = memoizedHost(hostPolicyFacts({ stateDir: DEFAULT_STATE_DIR }));
  if (devicePolicy) {
    const problems = loaded.targets.flatMap((t) =>
      refusedByPolicy(t.state.components, devicePolicy, policyHost).map((p) => ({ ...p, target: t.target.name })),
    );
    if (problems.length) {
      const flags = describePolicyFlags(devicePolicy);
      if (values.json)
        io.stdout.write(
          JSON.stringify(
            { error: { code: 'KS_NOT_PERMITTED', plan: FLEET_FILE, devicePolicy: flags, problems } },
            null,
            2,
          ) + '\n',
        );
      else if (markdown) io.stdout.write(renderPolicyRefusalMarkdown(FLEET_FILE, { flags }, problems));
      else io.stderr.write(renderPolicyRefusalText(FLEET_FILE, { flags }, problems));
      return EXIT.BAD_INPUT;
    }
  }
  const permissions = loaded.targets.flatMap((t) => permissionsOf(t.state.components, policyHost, t.target.name));

  // 2. The base: its fleet.toml's targets by name. A base without fleet.toml (the fleet starts in this change) makes
  // every target new; a base whose fleet.toml is invalid leaves nothing sound to compare with.
  let before = new Map<string, ResolvedTarget>();
  let comparedWith: ComparedWith = { kind: 'empty' };
  let comparedText = 'the empty state (a fresh device)';
  let comparedMd = comparedText;
  if (values.base !== undefined) {
    // isomorphic-git costs ~100 ms to load: only when a base is asked for.
    const { GitTreeReader } = await import('../../source/git-tree-reader.js');
    const reader = await GitTreeReader.open(root, values.base);
    const baseReader = (await policy.open(reader).catch(refused(values.base))).reader;
    const base = await loadFleet(baseReader);
    if (base.ok) await withSecrets(baseReader, base.targets);
    const missing = !base.ok && base.diagnostics.length === 1 && base.diagnostics[0]!.code === CODES.FLEET_MISSING;
    if (!base.ok && !missing) return invalid(base.diagnostics, values.base);
    if (base.ok) before = new Map(base.targets.map((t) => [t.target.name, t]));
    comparedWith = { kind: 'base', ref: values.base, commit: reader.commit, fleetPresent: !missing };
    comparedText = `${reader.label}${missing ? `, where ${FLEET_FILE} does not exist yet` : ''}`;
    comparedMd = `\`${values.base}\` (\`${reader.commit.slice(0, 7)}\`)${missing ? `, where \`${FLEET_FILE}\` does not exist yet` : ''}`;
  }

  // 3. The pure reconciles, one per target.
  // A target the base has under another name, taking the same devices (same selector and devices), is a rename:
  // its devices go from that target's plan to this one's, not from nothing.
  const names = new Set(loaded.targets.map((t) => t.target.name));
  const gone = [...before.values()].filter((t) => !names.has(t.target.name));
  const renamedFrom = new Map<string, ResolvedTarget>();
  for (const t of loaded.targets) {
    if (before.has(t.target.name)) continue;
    const same = gone.find((g) => ![...renamedFrom.values()].includes(g) && sameDevices(g, t));
    if (same) renamedFrom.set(t.target.name, same);
  }
  const renamed = new Set(renamedFrom.values());
  const dry: FleetDry = {
    targets: loaded.targets.map((t) => {
      const from = renamedFrom.get(t.target.name);
      const was = before.get(t.target.name) ?? from;
      return {
        name: t.target.name,
        plan: t.planFile,
        ...(was && was.planFile !== t.planFile && { planBefore: was.planFile }),
        isNew: comparedWith.kind === 'base' && !was,
        ...(from && { renamedFrom: from.target.name }),
        result: diff(t.state, was ? actualFromDesired(was.state) : EMPTY_ACTUAL),
      };
    }),
    removed: gone.filter((t) => !renamed.has(t)).map((t) => ({ name: t.target.name, plan: t.planFile })),
  };

  if (values.json) {
    const targets = dry.targets.map((t, i) => {
      const { target } = loaded.targets[i]!;
      return {
        name: t.name,
        plan: t.plan,
        // null: no selector (only `devices` match), which is not {} (every device matches).
        selector: target.selector ?? null,
        devices: target.devices ?? [],
        ...(t.isNew && { new: true }),
        ...(t.renamedFrom !== undefined && { renamedFrom: t.renamedFrom }),
        reconcile: plainReconcile(t.result),
      };
    });
    io.stdout.write(
      JSON.stringify(
        {
          fleet: true,
          repo: root,
          signature: head.verification,
          comparedWith,
          targets,
          removed: dry.removed.map((t) => t.name),
          permissions,
        },
        null,
        2,
      ) + '\n',
    );
  } else if (markdown)
    io.stdout.write(
      renderFleetDryMarkdown(dry, comparedMd, describeVerification(head.verification)) +
        renderPermissionsMarkdown(permissions, '###'),
    );
  else {
    const count = `${dry.targets.length} target${dry.targets.length === 1 ? '' : 's'}`;
    io.stdout.write(
      renderFleetDryText(
        dry,
        `apply-dry --fleet: ${count} of ${FLEET_FILE} against ${comparedText}; nothing was changed\n${describeVerification(head.verification)}`,
      ) + renderPermissionsText(permissions),
    );
  }
  return EXIT.OK;
}
