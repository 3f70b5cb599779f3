// `keystone init`: writes a first configuration file for this device (default /etc/keystone/agent.toml), commented so
// that an operator can read and edit it. The file is checked by the loader the agent uses before it takes its place,
// so init never leaves a file the agent would refuse; an existing file is replaced only with --force. Then it makes
// the device's keys in the state directory, as the first start would (kept when there are some), and prints their
// public halves, so that the device can be enrolled before it first runs.
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkStateDir } from '../../agent/state-dir.js';
import { OperationError } from '../../core/errors.js';
import { deviceNameProblem, labelsFromArgs } from '../../core/labels.js';
import { ensureDeviceKeys, identityPaths } from '../../identity/device-keys.js';
import { buildKeyring } from '../../trust/keyring.js';
import { AgentConfigError } from '../agent-config-error.js';
import { agentConfigText } from '../agent-config-text.js';
import { parseAgentConfig } from '../agent-config.js';
import { enrollmentSettings } from '../agent-settings.js';
import { EXIT, nowMs, random, UsageError, type CliIo } from '../io.js';

export const INIT_USAGE =
  'keystone init [--config /etc/keystone/agent.toml] (--repo URL|PATH [--ref main] --status-repo URL|PATH [--status-token-file F] | --dir PATH)\n' +
  '               [--plan PLAN] [--git-token-file F]\n' +
  '               [--device NAME] [--label KEY=VALUE…] (--trusted-key FILE… [--require-ref] | --allow-unsigned) [--enrollment-key FILE…] [--certificate FILE]\n' +
  "               [--state-dir /var/lib/keystone] [--force]   (then makes the device's keys in the state directory, as its first start would)";

export const DEFAULT_CONFIG_FILE = '/etc/keystone/agent.toml';

/** Readable by root and its group (an operators' group may run doctor), by nobody else: it names the secret files. */
export const CONFIG_FILE_MODE = 0o640;
/** A directory init creates: /etc/keystone as any /etc directory. */
export const CONFIG_DIR_MODE = 0o755;

const OPTIONS = {
  config: { type: 'string' },
  repo: { type: 'string' },
  dir: { type: 'string' },
  ref: { type: 'string' },
  'status-repo': { type: 'string' },
  'status-token-file': { type: 'string' },
  'git-token-file': { type: 'string' },
  plan: { type: 'string' },
  device: { type: 'string' },
  label: { type: 'string', multiple: true },
  'trusted-key': { type: 'string', multiple: true },
  'allow-unsigned': { type: 'boolean', default: false },
  'require-ref': { type: 'boolean', default: false },
  'enrollment-key': { type: 'string', multiple: true },
  certificate: { type: 'string' },
  'state-dir': { type: 'string', default: '/var/lib/keystone' },
  force: { type: 'boolean', default: false },
} as const;

export async function initCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if ((values.repo === undefined) === (values.dir === undefined))
    throw new UsageError('give one source: --repo URL|PATH (Git) or --dir PATH (a development directory)');
  for (const gitOnly of ['ref', 'status-repo', 'status-token-file', 'git-token-file'] as const)
    if (values.dir !== undefined && values[gitOnly] !== undefined)
      throw new UsageError(`--${gitOnly} is for a Git source (--repo), not --dir`);
  // Reports are pushed: a device reporting into the repository it follows holds a credential that can change what
  // every device runs. So a repository of their own is asked for; naming the followed one again is a choice made.
  if (values.repo !== undefined && values['status-repo'] === undefined)
    throw new UsageError(
      "give --status-repo URL|PATH: a repository of its own for this device's reports, so that its credential for --repo may only read (docs/security.md). " +
        'To report into the followed repository anyway, give --status-repo with the same URL as --repo',
    );
  const keys = values['trusted-key'] ?? [];
  if (values['allow-unsigned'] && keys.length)
    throw new UsageError('--allow-unsigned and --trusted-key exclude each other');
  if (values['allow-unsigned'] && values['require-ref'])
    throw new UsageError('--require-ref checks signatures: it makes no sense with --allow-unsigned');
  if (!values['allow-unsigned'] && !keys.length)
    throw new UsageError(
      'no trusted key: give --trusted-key FILE (repeatable), or --allow-unsigned for a development device',
    );
  const given = [
    ['--config', values.config],
    ['--repo', values.repo],
    ['--dir', values.dir],
    ['--plan', values.plan],
    ['--ref', values.ref],
    ['--status-repo', values['status-repo']],
    ['--state-dir', values['state-dir']],
  ] as const;
  for (const [flag, v] of given) if (v === '') throw new UsageError(`${flag} must not be empty`);
  const badDevice = values.device !== undefined ? deviceNameProblem(values.device) : undefined;
  if (badDevice) throw new UsageError(`--device: ${badDevice}`);
  try {
    labelsFromArgs(values.label ?? []);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // The keys are checked before anything is written: a device that trusts a file that is not a key trusts nothing.
  const keyFiles = keys.map((k) => resolve(io.cwd, k));
  if (keyFiles.length)
    buildKeyring(
      keyFiles.map((file) => {
        try {
          return { source: file, text: readFileSync(file, 'utf8') };
        } catch (e) {
          throw new UsageError(
            `cannot read the trusted key ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
          );
        }
      }),
    );
  // The enrolment keys and the certificate as the agent reads them: a file that is not one is refused before writing.
  const enrollment = enrollmentSettings(values, io);

  const file = resolve(io.cwd, values.config ?? DEFAULT_CONFIG_FILE);
  // A file with nothing but comments (the Debian package's template) holds no setting to lose: it is replaced as if absent.
  const replace = values.force || settingsFree(file);
  if (existsSync(file) && !replace)
    throw new UsageError(`${file} exists and has settings; pass --force to overwrite it`);
  // Paths are written absolute: the file says where things are on this device, wherever it was run from.
  const isUrl = (s: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(s);
  const text = agentConfigText({
    file,
    ...(values.repo !== undefined && { repo: isUrl(values.repo) ? values.repo : resolve(io.cwd, values.repo) }),
    ...(values.ref !== undefined && { ref: values.ref }),
    ...(values['status-repo'] !== undefined && {
      statusRepo: isUrl(values['status-repo']) ? values['status-repo'] : resolve(io.cwd, values['status-repo']),
    }),
    ...(values['status-token-file'] !== undefined && { statusTokenFile: resolve(io.cwd, values['status-token-file']) }),
    ...(values['git-token-file'] !== undefined && { gitTokenFile: resolve(io.cwd, values['git-token-file']) }),
    ...(values.dir !== undefined && { dir: resolve(io.cwd, values.dir) }),
    ...(values.plan !== undefined && { plan: values.plan }),
    ...(values.device !== undefined && { device: values.device }),
    labels: values.label ?? [],
    trustedKeys: keyFiles,
    allowUnsigned: values['allow-unsigned'],
    requireRef: values['require-ref'],
    enrollmentKeys: enrollment.enrollmentKeys.map((k) => k.file),
    ...(enrollment.certificate && { certificate: enrollment.certificate.file }),
    stateDir: resolve(io.cwd, values['state-dir']),
    hostname: hostname(),
    now: new Date(nowMs(io)),
  });
  const created = writeChecked(file, text, replace);
  if (values.repo !== undefined && values['status-repo'] === values.repo)
    io.stderr.write(
      `warning: reports go to the followed repository ${values.repo}: this device's credential must push there, so a compromised device could change what every device runs (docs/security.md)\n`,
    );
  io.stdout.write(
    `wrote ${file} (mode ${CONFIG_FILE_MODE.toString(8).padStart(4, '0')}${created.length ? `; created ${created.join(', ')} with mode 0755` : ''})\n` +
      `  run the agent:     keystone agent --config ${file}\n` +
      `  check the device:  keystone doctor --config ${file}\n`,
  );
  await printIdentity(resolve(io.cwd, values['state-dir']), values.device ?? hostname(), file, io);
  return EXIT.OK;
}

/** The device's keys, made as the agent's first start makes them (the state directory checked whole first), and their public halves. */
async function printIdentity(stateDir: string, device: string, configFile: string, io: CliIo): Promise<void> {
  checkStateDir(stateDir);
  const { keys, created } = await ensureDeviceKeys(stateDir, {
    now: () => nowMs(io),
    randomBytes: random(io),
    create: true,
  });
  io.stdout.write(
    `${created ? 'made' : 'kept'} the device's keys in ${identityPaths(stateDir).dir}:\n` +
      `  device         ${device}\n` +
      `  report key     ${keys.reportPublic}\n` +
      `  age recipient  ${keys.ageRecipient}\n` +
      `  enrol it:      keystone identity --config ${configFile} --json > ${device}.identity.json, then keystonectl enroll --key ENROLL.key --identity ${device}.identity.json\n`,
  );
}

/** True when `file` exists and every line is blank or a comment: the shipped template, nothing of the operator's. */
function settingsFree(file: string): boolean {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  return text.split('\n').every((line) => line.trim() === '' || line.trimStart().startsWith('#'));
}

/**
 * Writes `text` beside `file`, loads it back from the disk with the agent's loader, and only then puts it in place: linked (which
 * fails if a file appeared there meanwhile) or, with `force`, renamed over the old one. Returns the directories made.
 */
function writeChecked(file: string, text: string, force: boolean): string[] {
  // Checked before anything touches the disk too: a refused text (a token in a URL) is never written, not even briefly.
  const before = parseAgentConfig(file, text);
  if (before.diagnostics.length) throw new AgentConfigError(file, before.diagnostics, 'nothing was written');
  const dir = dirname(file);
  const created = ensureDirectory(dir);
  const temp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const fd = openSync(temp, 'wx', CONFIG_FILE_MODE);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // The umask may have taken bits away (or left group read out): the mode is set, not hoped for.
    chmodSync(temp, CONFIG_FILE_MODE);
    const loaded = parseAgentConfig(file, readFileSync(temp));
    if (loaded.diagnostics.length) throw new AgentConfigError(file, loaded.diagnostics, 'nothing was written');
    if (force) renameSync(temp, file);
    else {
      try {
        linkSync(temp, file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST')
          throw new UsageError(`${file} exists; pass --force to overwrite it`);
        throw e;
      }
    }
  } catch (e) {
    if (e instanceof AgentConfigError || e instanceof UsageError) throw e;
    throw new OperationError('KS_INIT_WRITE_FAILED', `cannot write ${file}: ${(e as Error).message}`);
  } finally {
    rmSync(temp, { force: true });
  }
  return created;
}

/** Makes the missing directories of `dir`, each 0755 (whatever the umask); returns them, outermost first. */
function ensureDirectory(dir: string): string[] {
  const missing: string[] = [];
  for (let d = dir; !existsSync(d) && dirname(d) !== d; d = dirname(d)) missing.unshift(d);
  try {
    for (const d of missing) {
      mkdirSync(d, { mode: CONFIG_DIR_MODE });
      chmodSync(d, CONFIG_DIR_MODE);
    }
  } catch (e) {
    throw new OperationError('KS_INIT_WRITE_FAILED', `cannot create the directory ${dir}: ${(e as Error).message}`);
  }
  return missing;
}
