// `keystone doctor`: one line per check of what `keystone agent` would run with, given the same arguments, and the
// fix for each that fails. Exit 0 when none fails, 1 otherwise (2 for arguments the agent would not take at all).
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { labelsFromArgs, type Labels } from '../../core/labels.js';
import { systemFacts } from '../../doctor/doctor-facts.js';
import type { DoctorSetup, DoctorSource } from '../../doctor/doctor-setup.js';
import { allPassed } from '../../doctor/check-result.js';
import { runDoctor } from '../../doctor/run-doctor.js';
import { parseOptionsBesideAgent, type AgentOptionValues } from '../agent-options.js';
import { EXIT, nowMs, UsageError, type CliIo } from '../io.js';
import { engineSocketsFrom } from '../engine-args.js';
import { devicePolicyFrom } from '../policy-args.js';
import { doctorJson, doctorText } from '../render/doctor-text.js';
import { planPathIn } from '../repository-args.js';
import { secretFrom } from '../secret-file.js';
import { trustedFilesOf } from '../trusted-files.js';

export const DOCTOR_USAGE = 'keystone doctor [--config FILE] [agent flags…] [--json]   (no --config, --repo or --dir: /etc/keystone/agent.toml when it exists)';

/** The file the Debian package's service runs the agent with (packaging/keystone.service). */
export { INSTALLED_CONFIG } from '../agent-options.js';

export async function doctorCommand(argv: string[], io: CliIo): Promise<number> {
  // --json is doctor's own; everything else is the agent's, parsed by the agent's own table (and --config).
  const json = argv.includes('--json');
  const rest = argv.filter((a) => a !== '--json');
  // On a device, bare `keystone doctor` checks what the service runs: the installed configuration file.
  // A configuration file another user could change is read all the same: the trusted-files check names it and its fix.
  const { values, positionals, configFile } = parseOptionsBesideAgent(rest, io, { checkConfigOwner: false });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const setup = { ...doctorSetup(values, io), trustedFiles: trustedFilesOf(values, io, configFile) };
  // The clock is io's, so that an in-process run can set it (the clock check).
  // The engines where the agent would look for them: a socket it would refuse is refused here too (exit 2).
  const engineSockets = engineSocketsFrom(values, io.env, io.cwd);
  const results = await runDoctor(setup, { ...systemFacts({ env: io.env, now: () => nowMs(io) }), engineSockets });
  io.stdout.write(json ? doctorJson(results) : doctorText(results));
  return allPassed(results) ? EXIT.OK : EXIT.FAILED;
}

/** The agent's arguments as the agent reads them (commands/agent.ts), into what the checks need. */
function doctorSetup(values: AgentOptionValues, io: CliIo): DoctorSetup {
  const root = values.dir === undefined ? undefined : resolve(io.cwd, values.dir);
  let source: DoctorSource;
  if ((values.repo === undefined) === (values.dir === undefined))
    source = { kind: 'none', problem: values.repo === undefined ? 'no source: neither --repo nor --dir is given' : 'both --repo and --dir are given: the agent follows one source' };
  else if (root !== undefined) source = { kind: 'dir', root };
  else {
    const repo = values.repo!;
    const token = gitToken(values, io);
    const location = (r: string) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(r) ? r : resolve(io.cwd, r));
    const gitNotes = (values.status ?? 'git-notes').split(',').some((x) => x.trim() === 'git-notes');
    const statusRepo = values['status-repo'] === undefined ? undefined : location(values['status-repo']);
    const statusToken = secretOrNothing(values['status-token-file'] && resolve(io.cwd, values['status-token-file']), io.env.KEYSTONE_STATUS_TOKEN);
    source = { kind: 'git', repo: location(repo), ref: values.ref ?? 'main', ...token, ...(statusRepo !== undefined && { statusRepo }), ...(statusToken !== undefined && { statusToken }), gitNotes };
  }
  if (values.plan === '') throw new UsageError('--plan takes a plan file; leave it out to take the plan from fleet.toml');
  const planFile = values.plan === undefined ? undefined : root !== undefined ? planPathIn(root, values.plan) : values.plan.split('\\').join('/').replace(/^\.\//, '');
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
    const token = secretFrom(values['git-token-file'] && resolve(io.cwd, values['git-token-file']), io.env.KEYSTONE_GIT_TOKEN, 'Git token');
    return token === undefined ? {} : { token };
  } catch (e) {
    return { tokenProblem: (e as Error).message };
  }
}
