// `keystone doctor`: one line per check of what `keystone agent` would run with, given the same arguments, and the
// fix for each that fails. Exit 0 when none fails, 1 otherwise; 2 for arguments that cannot even be read (a flag the
// agent does not have, a configuration file that does not validate, an engine socket it would refuse). A value the
// agent's rules refuse (`--listen 0.0.0.0:8080` without --listen-public, `--window bogus`) is the `settings` line's.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { labelsFromArgs, type Labels } from '../../core/labels.js';
import { systemFacts } from '../../doctor/doctor-facts.js';
import type { TrustSetting } from '../../agent/agent-types.js';
import type { DoctorSetup, DoctorSource } from '../../doctor/doctor-setup.js';
import { allPassed, CHECK_IDS, skip, type CheckResult } from '../../doctor/check-result.js';
import { runDoctor } from '../../doctor/run-doctor.js';
import { checkSettings, settingsVerdict, type SettingsVerdict } from '../../doctor/settings-check.js';
import { checkAgentFlags } from '../agent-flags.js';
import { parseOptionsBesideAgent, type AgentOptionValues } from '../agent-options.js';
import { agentSettings } from '../agent-settings.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { engineSocketsFrom } from '../engine-args.js';
import { devicePolicyFrom } from '../policy-args.js';
import { doctorJson, doctorText } from '../render/doctor-text.js';
import { planPathIn } from '../repository-args.js';
import { secretFrom } from '../secret-file.js';
import { trustSetting } from '../trust-args.js';
import { trustedFilesOf } from '../trusted-files.js';

export const DOCTOR_USAGE =
  'keystone doctor [--config FILE] [agent flags…] [--json]   (no --config, --repo or --dir: /etc/keystone/agent.toml when it exists)';

/** The file the Debian package's service runs the agent with (packaging/keystone.service). */
export { INSTALLED_CONFIG } from '../agent-options.js';

export async function doctorCommand(argv: string[], io: CliIo): Promise<number> {
  // --json is doctor's own; everything else is the agent's, parsed by the agent's own table (and --config).
  const json = argv.includes('--json');
  const rest = argv.filter((a) => a !== '--json');
  // On a device, bare `keystone doctor` checks what the service runs: the installed configuration file.
  // A configuration file another user could change is read all the same: the trusted-files check names it and its fix.
  const parsed = parseOptionsBesideAgent(rest, io, { checkConfigOwner: false });
  const { values, positionals, configFile } = parsed;
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  // The agent's own checks of its settings, as commands/agent.ts runs them once the files' owners passed (that is the
  // trusted-files check's): every flag through its key's rule and its combinations, then the conversion. A refusal is
  // the `settings` line, and doctor goes on with the checks it can make.
  let agentTrust: TrustSetting | undefined;
  const settings = settingsVerdict(() => {
    agentTrust = agentSettings(checkAgentFlags(rest, parsed, io), io).run.trust;
  }, configFile);
  let base: Omit<DoctorSetup, 'settings'>;
  try {
    base = doctorSetup(values, io);
  } catch (e) {
    // A value the rules refused that doctor's own reading trips on too (--plan ''): the `settings` line says it.
    if (settings.ok || !(e instanceof UsageError)) throw e;
    return report(onlySettings(settings), json, io);
  }
  const setup: DoctorSetup = {
    ...base,
    settings,
    trustedFiles: trustedFilesOf(values, io, configFile),
    ...verificationOf(values, agentTrust, io),
  };
  // The clock is io's, so that an in-process run can set it (the clock check).
  // The engines where the agent would look for them: a socket it would refuse is refused here too (exit 2).
  const engineSockets = engineSocketsFrom(values, io.env, io.cwd);
  const results = await runDoctor(setup, { ...systemFacts({ env: io.env, now: () => nowMs(io) }), engineSockets });
  return report(results, json, io);
}

function report(results: CheckResult[], json: boolean, io: CliIo): number {
  io.stdout.write(json ? doctorJson(results) : doctorText(results));
  return allPassed(results) ? EXIT.OK : EXIT.FAILED;
}

/** The `settings` line alone, when the arguments do not even make a setup to check. */
function onlySettings(settings: SettingsVerdict): CheckResult[] {
  return CHECK_IDS.map((id) =>
    id === 'settings'
      ? checkSettings(settings)
      : skip(id, 'not checked: the agent does not start with these settings (see settings)'),
  );
}

/**
 * The keyring and limits the first-revision check verifies with: the agent's own (agentSettings) when its settings
 * pass; when they are refused for something else (--window bogus), keystonectl verify's reading of the same flags
 * (trust-args.ts), so the tip is still judged; none with --allow-unsigned or keys that do not load (trusted-keys says why).
 */
function verificationOf(
  values: AgentOptionValues,
  agentTrust: TrustSetting | undefined,
  io: CliIo,
): Pick<DoctorSetup, 'verification'> {
  if (values['allow-unsigned']) return {};
  let trust = agentTrust;
  if (trust === undefined)
    try {
      trust = trustSetting(values, io);
    } catch {
      trust = undefined;
    }
  return trust !== undefined && !trust.unsigned ? { verification: trust } : {};
}

/** The agent's arguments as the agent reads them (commands/agent.ts), into what the checks need. */
function doctorSetup(values: AgentOptionValues, io: CliIo): Omit<DoctorSetup, 'settings'> {
  const root = values.dir === undefined ? undefined : resolve(io.cwd, values.dir);
  let source: DoctorSource;
  if ((values.repo === undefined) === (values.dir === undefined))
    source = {
      kind: 'none',
      problem:
        values.repo === undefined
          ? 'no source: neither --repo nor --dir is given'
          : 'both --repo and --dir are given: the agent follows one source',
    };
  else if (root !== undefined) source = { kind: 'dir', root };
  else {
    const repo = values.repo!;
    const token = gitToken(values, io);
    const location = (r: string) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(r) ? r : resolve(io.cwd, r));
    const gitNotes = (values.status ?? 'git-notes').split(',').some((x) => x.trim() === 'git-notes');
    const statusRepo = values['status-repo'] === undefined ? undefined : location(values['status-repo']);
    const statusToken = secretOrNothing(
      values['status-token-file'] && resolve(io.cwd, values['status-token-file']),
      io.env.KEYSTONE_STATUS_TOKEN,
    );
    source = {
      kind: 'git',
      repo: location(repo),
      ref: values.ref ?? 'main',
      ...token,
      ...(statusRepo !== undefined && { statusRepo }),
      ...(statusToken !== undefined && { statusToken }),
      gitNotes,
    };
  }
  if (values.plan === '')
    throw new UsageError('--plan takes a plan file; leave it out to take the plan from fleet.toml');
  const planFile =
    values.plan === undefined
      ? undefined
      : root !== undefined
        ? planPathIn(root, values.plan)
        : values.plan.split('\\').join('/').replace(/^\.\//, '');
  let labels: Labels;
  try {
    labels = labelsFromArgs(values.label ?? []);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return {
    stateDir: resolve(io.cwd, values['state-dir']),
    source,
    ...(planFile !== undefined && { planFile }),
    device: values.device ?? hostname(),
    labels,
    trust: {
      unsigned: values['allow-unsigned'] ?? false,
      keyFiles: (values['trusted-key'] ?? []).map((k) => resolve(io.cwd, k)),
      ...(values.threshold !== undefined && { threshold: values.threshold }),
    },
    allowRoot: devicePolicyFrom(values).allowRoot,
    enrollment: {
      keyFiles: (values['enrollment-key'] ?? []).map((k) => resolve(io.cwd, k)),
      ...(values.certificate !== undefined && { certificateFile: resolve(io.cwd, values.certificate) }),
    },
  };
}

/** The reports repository's token as the agent reads it; one that cannot be read is the trusted-files check's finding. */
function secretOrNothing(file: string | undefined, env: string | undefined): string | undefined {
  try {
    return secretFrom(file, env, 'reports repository token');
  } catch {
    return undefined;
  }
}

/** The Git token as the agent reads it (--git-token-file, else KEYSTONE_GIT_TOKEN); a file it cannot read is a finding. */
function gitToken(values: AgentOptionValues, io: CliIo): { token?: string; tokenProblem?: string } {
  try {
    const token = secretFrom(
      values['git-token-file'] && resolve(io.cwd, values['git-token-file']),
      io.env.KEYSTONE_GIT_TOKEN,
      'Git token',
    );
    return token === undefined ? {} : { token };
  } catch (e) {
    return { tokenProblem: (e as Error).message };
  }
}
