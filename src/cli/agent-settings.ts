// `keystone agent`'s options, checked already (each value by its rule in agent-config-rules.ts, for the file when it
// was read and for the flags in agent-flags.ts), turned into the typed settings the composition root takes
// (agent/run-agent.ts). Nothing here judges a value: what could still fail is the environment, which no rule sees
// (the host name, DOCKER_HOST, a token given only by an environment variable).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { EnrollmentSettings, GitSettings, RunSettings } from '../agent/run-settings.js';
import { parseListenAddress, type ListenAddress } from '../api/listen-address.js';
import { canonicalCapability, canonicalHostPath, type DevicePolicy } from '../core/device-policy.js';
import { parseDuration } from '../core/duration.js';
import { labelsFromArgs } from '../core/labels.js';
import { parseWindowText, type MaintenanceWindow } from '../core/maintenance-window.js';
import { DEFAULT_RESTART_LIMITS } from '../core/restart-policy.js';
import { parseGitRepo } from '../git/git-repo-location.js';
import { ownerRepoFromUrl } from '../report/github-status-reporter.js';
import { buildKeyring } from '../trust/keyring.js';
import type { CheckedAgentValues } from './agent-flags.js';
import { deviceName } from './device-name.js';
import { engineSocketsFrom } from './engine-args.js';
import { readEnrollment } from './enrollment-settings.js';
import { UsageError, type CliIo } from './io.js';
import { secretFrom } from './secret-file.js';

// Other commands take these from here.
export { deviceName } from './device-name.js';
export { enrollmentSettings } from './enrollment-settings.js';

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

/** A duration its rule accepted. */
const ms = (text: string): number => parseDuration(text)!;

export function agentSettings(values: CheckedAgentValues, io: CliIo): AgentCliSettings {
  const at = (path: string) => resolve(io.cwd, path);
  const root = values.dir === undefined ? undefined : at(values.dir);
  // The plan is a path inside the repository: for a Git source it is read from each commit's tree.
  const plan = values.plan;
  const planFile =
    plan === undefined
      ? undefined
      : root !== undefined
        ? (isAbsolute(plan) ? relative(root, plan) : plan).split(sep).join('/')
        : plan.split('\\').join('/').replace(/^\.\//, '');
  const gitToken = secretFrom(
    values['git-token-file'] && at(values['git-token-file']),
    io.env.KEYSTONE_GIT_TOKEN,
    'Git token',
  );
  const webhookSecret = secretFrom(
    values['webhook-secret-file'] && at(values['webhook-secret-file']),
    io.env.KEYSTONE_WEBHOOK_SECRET,
    'webhook secret',
  );
  const run: RunSettings = {
    source: root !== undefined ? { kind: 'dir', root, settleMs: ms(values.settle) } : gitSettings(values, io, gitToken),
    ...(planFile !== undefined && { planFile }),
    // The host name is the one name here no rule has seen.
    device: values.device ?? deviceName({}),
    labels: labelsFromArgs(values.label ?? []),
    stateDir: at(values['state-dir']),
    trust: trustSetting(values, io),
    policy: devicePolicy(values),
    engineSockets: engineSockets(values, io),
    allowAgentUpdate: values['allow-agent-update'],
    concurrency: values.concurrency === undefined ? availableParallelism() : Number(values.concurrency),
    graceMs: ms(values.grace),
    restartLimits: {
      ...DEFAULT_RESTART_LIMITS,
      maxBackoffMs: ms(values['max-backoff']),
      healthySpellMs: ms(values['healthy-spell']),
      crashLoopLimit: Number(values['crash-loop-limit']),
    },
    logMaxBytes: Number(values['log-max-bytes']),
    logKeep: Number(values['log-keep']),
    ...(values.window !== undefined && { window: parseWindowText(values.window) as MaintenanceWindow }),
  };
  return {
    run,
    listen: parseListenAddress(values.listen ?? DEFAULT_LISTEN),
    listenPublic: values['listen-public'],
    socketPath: values.socket === undefined ? undefined : at(values.socket),
    dashboard: values.dashboard,
    ...(webhookSecret !== undefined && { webhookSecret }),
    logFormat: (values['log-format'] ?? (io.stdout.isTTY ? 'pretty' : 'json')) as 'pretty' | 'json',
    stopOnExit: values['stop-on-exit'],
    enrollment: readEnrollment(values, io),
  };
}

/** A keyring to verify every revision with, or the explicit unsigned mode. */
function trustSetting(values: CheckedAgentValues, io: CliIo): RunSettings['trust'] {
  if (values['allow-unsigned']) return { unsigned: true };
  const keys = (values['trusted-key'] ?? []).map((k) => ({
    source: k,
    text: readFileSync(resolve(io.cwd, k), 'utf8'),
  }));
  return {
    unsigned: false,
    keyring: buildKeyring(keys, values.threshold === undefined ? 1 : Number(values.threshold)),
    ...(values['max-age'] !== undefined && { maxAgeSeconds: ms(values['max-age']) / 1000 }),
    ...(values['max-clock-skew'] !== undefined && { maxClockSkewSeconds: ms(values['max-clock-skew']) / 1000 }),
    ...(values['require-ref'] === true && { requireRef: true }),
  };
}

/** The device policy, its paths and capabilities in their canonical forms, each once. */
function devicePolicy(values: CheckedAgentValues): DevicePolicy {
  const paths = (list: string[] | undefined) => [...new Set((list ?? []).map((p) => canonicalHostPath(p)!))];
  return {
    allowPrivileged: values['allow-privileged'],
    allowHostNamespaces: values['allow-host-namespaces'],
    allowMounts: paths(values['allow-mount']),
    allowCapabilities: [...new Set((values['allow-capability'] ?? []).map((c) => canonicalCapability(c)!))],
    allowDevices: paths(values['allow-device']),
    allowRoot: values['allow-root'],
  };
}

/** `--docker-socket`, else DOCKER_HOST (the environment's, checked by engine-args.ts: no rule sees it); `--podman-socket`. */
function engineSockets(values: CheckedAgentValues, io: CliIo): RunSettings['engineSockets'] {
  const docker =
    values['docker-socket'] !== undefined ? [values['docker-socket']] : engineSocketsFrom({}, io.env, io.cwd).docker;
  const podman = values['podman-socket'];
  return { ...(docker && { docker }), ...(podman !== undefined && { podman: [podman] }) };
}

function gitSettings(values: CheckedAgentValues, io: CliIo, token: string | undefined): GitSettings {
  const repo = /^https?:\/\//i.test(values.repo!) ? values.repo! : resolve(io.cwd, values.repo!);
  const location = values['status-repo'] === undefined ? undefined : parseGitRepo(values['status-repo']);
  const statusRepo = location && (location.kind === 'http' ? location.url : location.path);
  // The reports repository's own credential (it must push), so that the followed repository's may be read-only.
  const statusToken = secretFrom(
    values['status-token-file'] && resolve(io.cwd, values['status-token-file']),
    io.env.KEYSTONE_STATUS_TOKEN,
    'reports repository token',
  );
  // status-token-file without status-repo was refused with its combination: only KEYSTONE_STATUS_TOKEN gets here.
  if (statusToken !== undefined && statusRepo === undefined)
    throw new UsageError('--status-token-file is the token of --status-repo: give the reports repository too');
  const status = (values.status ?? 'git-notes')
    .split(',')
    .map((x) => x.trim())
    .filter((x): x is 'git-notes' | 'github' => x === 'git-notes' || x === 'github');
  let github: GitSettings['github'];
  if (status.includes('github')) {
    const [owner, name] = values['github-repo']?.split('/') ?? [];
    const target = owner !== undefined && name !== undefined ? { owner, repo: name } : ownerRepoFromUrl(repo)!;
    const githubToken =
      secretFrom(
        values['github-token-file'] && resolve(io.cwd, values['github-token-file']),
        io.env.KEYSTONE_GITHUB_TOKEN,
        'GitHub token',
      ) ?? token;
    // Whether a token is there is the environment's business too (KEYSTONE_GITHUB_TOKEN, KEYSTONE_GIT_TOKEN).
    if (!githubToken)
      throw new UsageError(
        '--status github needs a token: --github-token-file FILE or KEYSTONE_GITHUB_TOKEN (or the Git token)',
      );
    github = {
      ...target,
      token: githubToken,
      ...(values['github-api'] !== undefined && { apiBase: values['github-api'] }),
    };
  }
  return {
    kind: 'git',
    repo,
    ref: values.ref ?? 'main',
    pollMs: ms(values.poll ?? '60s'),
    ...(token !== undefined && { token }),
    allowHistoryRewrite: values['allow-history-rewrite'],
    onFailure: values['on-failure'] as 'none' | 'rollback',
    ...(statusRepo !== undefined && { statusRepo }),
    ...(statusToken !== undefined && { statusToken }),
    status,
    ...(github && { github }),
  };
}
