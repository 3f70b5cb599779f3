// `keystone agent`'s flags (over the configuration file, over the defaults: agent-options.ts) checked once and turned
// into the typed settings the composition root takes (agent/run-agent.ts). Each problem is a UsageError naming the
// flag: exit code 2, and nothing on the device touched.
import { parseWindowText, type MaintenanceWindow } from '../core/maintenance-window.js';
import { readFileSync, statSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { resolve } from 'node:path';
import { MAX_CERTIFICATE_FILE_BYTES, type EnrollmentSettings, type GitSettings, type RunSettings } from '../agent/run-settings.js';
import { parseDuration } from '../core/duration.js';
import { deviceNameProblem, labelsFromArgs, type Labels } from '../core/labels.js';
import { DEFAULT_RESTART_LIMITS } from '../core/restart-policy.js';
import { parseGitRepo } from '../source/git-repo-location.js';
import { ownerRepoFromUrl } from '../status/github-status-reporter.js';
import { isLoopbackAddress, parseListenAddress, type ListenAddress } from '../api/listen-address.js';
import type { AgentOptionValues } from './agent-options.js';
import { UsageError, type CliIo } from './io.js';
import { engineSocketsFrom } from './engine-args.js';
import { devicePolicyFrom } from './policy-args.js';
import { planPathIn } from './repository-args.js';
import { secretFrom } from './secret-file.js';
import { parsePublicKey } from '../trust/minisign.js';
import { trustSetting } from './trust-args.js';

/** SPEC §9: loopback, so that only this machine reaches the API unless the operator says otherwise. */
const DEFAULT_LISTEN = '127.0.0.1:8080';

/** What the CLI keeps for itself: the API's listeners, the log's form, what a stop does. */
export interface AgentCliSettings {
  run: RunSettings;
  listen: ListenAddress | undefined;
  listenPublic: boolean;
  socketPath: string | undefined;
  dashboard: boolean;
  webhookSecret?: string;
  logFormat: 'pretty' | 'json';
  stopOnExit: boolean;
  /** `--enrollment-key` and `--certificate`: run.identity once the device's keys are read at start. */
  enrollment: EnrollmentSettings;
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number ≥ 1, not "${text}"`);
  return n;
}

export function agentSettings(values: AgentOptionValues, positionals: string[], io: CliIo): AgentCliSettings {
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if ((values.repo === undefined) === (values.dir === undefined)) throw new UsageError('give one source: --repo URL|PATH (Git) or --dir PATH (a development directory)');
  if (values.plan === '') throw new UsageError('--plan takes a plan file; leave it out to take the plan from fleet.toml');
  const gitFlags = ['ref', 'poll', 'git-token-file', 'status', 'status-repo', 'status-token-file', 'github-repo', 'github-token-file', 'github-api', 'webhook-secret-file'] as const;
  const misplaced = gitFlags.find((f) => values[f] !== undefined) ?? (values['allow-history-rewrite'] || values['on-failure'] !== 'none' ? 'allow-history-rewrite or --on-failure' : undefined);
  if (values.dir !== undefined && misplaced) throw new UsageError(`--${misplaced} is for a Git source (--repo), not --dir`);
  if (values['on-failure'] !== 'none' && values['on-failure'] !== 'rollback') throw new UsageError(`--on-failure must be none or rollback, not "${values['on-failure']}"`);
  const root = values.dir === undefined ? undefined : resolve(io.cwd, values.dir);
  // The plan is a path inside the repository: for a Git source it is read from each commit's tree.
  const planFile = values.plan === undefined ? undefined : root !== undefined ? planPathIn(root, values.plan) : values.plan.split('\\').join('/').replace(/^\.\//, '');
  const settleMs = parseDuration(values.settle);
  const graceMs = parseDuration(values.grace);
  if (graceMs === undefined || settleMs === undefined) throw new UsageError('--grace and --settle take durations such as 10s');
  const device = deviceName(values);
  let labels: Labels;
  try {
    labels = labelsFromArgs(values.label ?? []);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const concurrency = values.concurrency === undefined ? availableParallelism() : Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency must be a whole number ≥ 1, not "${values.concurrency}"`);
  const maxBackoffMs = parseDuration(values['max-backoff']);
  const healthySpellMs = parseDuration(values['healthy-spell']);
  const crashLoopLimit = Number(values['crash-loop-limit']);
  if (maxBackoffMs === undefined || healthySpellMs === undefined || !Number.isInteger(crashLoopLimit) || crashLoopLimit < 1)
    throw new UsageError('--max-backoff and --healthy-spell take durations, --crash-loop-limit a whole number ≥ 1');
  let listen: ListenAddress | undefined;
  try {
    listen = parseListenAddress(values.listen ?? DEFAULT_LISTEN);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // Loopback unless the operator says otherwise in so many words: the API steers every component on the device.
  if (listen && !isLoopbackAddress(listen) && !values['listen-public'])
    throw new UsageError(`--listen ${values.listen} is not a loopback address: add --listen-public to expose the API beyond this machine`);
  const logFormat = values['log-format'] ?? (io.stdout.isTTY ? 'pretty' : 'json');
  if (logFormat !== 'pretty' && logFormat !== 'json') throw new UsageError(`--log-format must be pretty or json, not "${logFormat}"`);
  const gitToken = secretFrom(values['git-token-file'] && resolve(io.cwd, values['git-token-file']), io.env.KEYSTONE_GIT_TOKEN, 'Git token');
  const webhookSecret = secretFrom(values['webhook-secret-file'] && resolve(io.cwd, values['webhook-secret-file']), io.env.KEYSTONE_WEBHOOK_SECRET, 'webhook secret');
  const run: RunSettings = {
    source: root !== undefined ? { kind: 'dir', root, settleMs } : gitSettings(values, io, gitToken),
    ...(planFile !== undefined && { planFile }),
    device,
    labels,
    stateDir: resolve(io.cwd, values['state-dir']),
    trust: trustSetting(values, io),
    policy: devicePolicyFrom(values),
    engineSockets: engineSocketsFrom(values, io.env, io.cwd),
    allowAgentUpdate: values['allow-agent-update'],
    concurrency,
    graceMs,
    restartLimits: { ...DEFAULT_RESTART_LIMITS, maxBackoffMs, healthySpellMs, crashLoopLimit },
    logMaxBytes: positiveInt(values['log-max-bytes'], '--log-max-bytes'),
    logKeep: positiveInt(values['log-keep'], '--log-keep'),
    ...(values.window !== undefined && { window: windowFrom(values.window) }),
  };
  return {
    run,
    listen,
    listenPublic: values['listen-public'],
    socketPath: values.socket === undefined ? undefined : resolve(io.cwd, values.socket),
    dashboard: values.dashboard,
    ...(webhookSecret !== undefined && { webhookSecret }),
    logFormat,
    stopOnExit: values['stop-on-exit'],
    enrollment: separateKeys(run.trust, enrollmentSettings(values, io)),
  };
}

/**
 * One key, one role: a release key that also enrols devices lets whoever holds it mint an identity as well as sign
 * what runs, and an enrolment key trusted as a release key (`keystonectl keygen` makes both alike) would let the
 * enrolment desk sign releases. Refused, with both flags named.
 */
function separateKeys(trust: RunSettings['trust'], enrollment: EnrollmentSettings): EnrollmentSettings {
  if (trust.unsigned) return enrollment;
  const release = [...trust.keyring.keys.values()].map((k) => Buffer.from(k.publicKey).toString('hex'));
  const both = enrollment.enrollmentKeys.find((e) => release.includes(Buffer.from(e.key.publicKey).toString('hex')));
  if (both) throw new UsageError(`--enrollment-key ${both.file} is also a --trusted-key: a release key must not enrol devices, nor an enrolment key sign releases (make one with keystonectl keygen --out enroll)`);
  return enrollment;
}

/** `--device`, else the host name: checked, since it names the device's reports (`keystone/<device>`) and fleet.toml's `devices`. */
export function deviceName(values: Pick<AgentOptionValues, 'device'>): string {
  const device = values.device ?? hostname();
  const badDevice = deviceNameProblem(device);
  if (badDevice) throw new UsageError(`--device: ${badDevice}`);
  return device;
}

/**
 * `--enrollment-key FILE…` (minisign public keys, trusted as --trusted-key is: cli/trusted-files.ts checks who could
 * change them) and `--certificate FILE` (read, size-capped; verified by whoever uses it, against the enrolment keys).
 */
export function enrollmentSettings(values: Pick<AgentOptionValues, 'enrollment-key' | 'certificate'>, io: Pick<CliIo, 'cwd'>): EnrollmentSettings {
  const enrollmentKeys = (values['enrollment-key'] ?? []).map((given) => {
    const file = resolve(io.cwd, given);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new UsageError(`cannot read the enrollment key ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    try {
      return { file, key: parsePublicKey(text) };
    } catch (e) {
      throw new UsageError(`--enrollment-key ${file} is not a minisign public key: ${(e as Error).message}`);
    }
  });
  if (values.certificate === undefined) return { enrollmentKeys };
  if (values.certificate === '') throw new UsageError('--certificate takes the file keystonectl enroll wrote for this device');
  const file = resolve(io.cwd, values.certificate);
  let size: number;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw new UsageError(`--certificate ${file} is not a file`);
    size = st.size;
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`cannot read the certificate ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  // Checked before reading: a wrong file named by mistake (an image, a log) is not read whole.
  if (size > MAX_CERTIFICATE_FILE_BYTES) throw new UsageError(`--certificate ${file} is ${size} bytes, more than a certificate can be (${MAX_CERTIFICATE_FILE_BYTES})`);
  const text = readFileSync(file, 'utf8');
  if (Buffer.byteLength(text) > MAX_CERTIFICATE_FILE_BYTES) throw new UsageError(`--certificate ${file} is more than a certificate can be (${MAX_CERTIFICATE_FILE_BYTES} bytes)`);
  return { enrollmentKeys, certificate: { file, text } };
}

function gitSettings(values: AgentOptionValues, io: CliIo, token: string | undefined): GitSettings {
  const url = /^https?:\/\//i.test(values.repo!);
  const repo = url ? values.repo! : resolve(io.cwd, values.repo!);
  const pollMs = parseDuration(values.poll ?? '60s');
  if (pollMs === undefined || pollMs <= 0) throw new UsageError(`--poll takes a duration such as 60s, not "${values.poll}"`);
  // The reports repository is held to the rules of --repo: no credentials or query in the URL, no SSH.
  let statusRepo: string | undefined;
  if (values['status-repo'] !== undefined) {
    try {
      const loc = parseGitRepo(/^[a-z][a-z0-9+.-]*:\/\//i.test(values['status-repo']) ? values['status-repo'] : resolve(io.cwd, values['status-repo']));
      statusRepo = loc.kind === 'http' ? loc.url : loc.path;
    } catch (e) {
      throw new UsageError(`--status-repo: ${(e as Error).message}`);
    }
  }
  // The reports repository's own credential (it must push), so that the followed repository's may be read-only.
  const statusToken = secretFrom(values['status-token-file'] && resolve(io.cwd, values['status-token-file']), io.env.KEYSTONE_STATUS_TOKEN, 'reports repository token');
  if (statusToken !== undefined && statusRepo === undefined) throw new UsageError('--status-token-file is the token of --status-repo: give the reports repository too');
  const status: GitSettings['status'] = [];
  for (const name of (values.status ?? 'git-notes').split(',').map((x) => x.trim()).filter(Boolean)) {
    if (name === 'git-notes' || name === 'github') status.push(name);
    else if (name !== 'none') throw new UsageError(`--status takes git-notes, github or none, not "${name}"`);
  }
  let github: GitSettings['github'];
  if (status.includes('github')) {
    const target = values['github-repo'] !== undefined ? parseOwnerRepo(values['github-repo']) : ownerRepoFromUrl(repo);
    if (!target) throw new UsageError(`--status github: give --github-repo OWNER/REPO (it cannot be read from ${repo})`);
    const githubToken = secretFrom(values['github-token-file'] && resolve(io.cwd, values['github-token-file']), io.env.KEYSTONE_GITHUB_TOKEN, 'GitHub token') ?? token;
    if (!githubToken) throw new UsageError('--status github needs a token: --github-token-file FILE or KEYSTONE_GITHUB_TOKEN (or the Git token)');
    github = { ...target, token: githubToken, ...(values['github-api'] !== undefined && { apiBase: values['github-api'] }) };
  }
  return {
    kind: 'git',
    repo,
    ref: values.ref ?? 'main',
    pollMs,
    ...(token !== undefined && { token }),
    allowHistoryRewrite: values['allow-history-rewrite'],
    onFailure: values['on-failure'] as 'none' | 'rollback',
    ...(statusRepo !== undefined && { statusRepo }),
    ...(statusToken !== undefined && { statusToken }),
    status,
    ...(github && { github }),
  };
}

function windowFrom(text: string): MaintenanceWindow {
  const w = parseWindowText(text);
  if (typeof w === 'string') throw new UsageError(`--window: ${w}`);
  return w;
}

function parseOwnerRepo(text: string): { owner: string; repo: string } {
  const m = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(text);
  if (!m) throw new UsageError(`--github-repo must be OWNER/REPO, not "${text}"`);
  return { owner: m[1]!, repo: m[2]! };
}
