// `keystone agent`: follow a desired-state source and keep this device converged on it, until SIGINT/SIGTERM.
import { readFileSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { componentPaths, startAgent, type Agent, type TrustSetting } from '../../agent/agent.js';
import { describeDevicePolicy, type DevicePolicy } from '../../core/device-policy.js';
import { checkDevice } from '../../runtime/device-check.js';
import { hostPolicyFacts } from '../../runtime/policy-host.js';
import { isSameProcess, processUid } from '../../runtime/proc-identity.js';
import { devicePolicyFrom, POLICY_USAGE } from '../policy-args.js';
import { parseAgentOptions } from '../agent-options.js';
import { ensureApiToken } from '../../api/api-token.js';
import { checkListenAddress } from '../../api/check-listen-address.js';
import { formatListenAddress, isLoopbackAddress, parseListenAddress, publicHostAllowance, type ListenAddress } from '../../api/listen-address.js';
import type { ApiListeners } from '../../api/listen-api.js';
import { ownerTag } from '../../agent/orphan-sweep.js';
import { openStateDir } from '../../agent/state-dir.js';
import { parseDuration } from '../../core/duration.js';
import { OperationError } from '../../core/errors.js';
import type { Logger } from '../../log/logger.js';
import { DEFAULT_RESTART_LIMITS } from '../../core/restart-policy.js';
import { createLogger } from '../../log/logger.js';
import type { ArtifactInstallerOptions, InstallArtifactsFn } from '../../runtime/artifact-installer.js';
import { ProcessRuntime, type BoundProbe } from '../../runtime/process-runtime.js';
import { ContainerRuntime } from '../../runtime/container-runtime.js';
import type { DesiredComponent } from '../../core/desired-state.js';
import type { Revision } from '../../source/directory-source.js';
import type { RepoReader } from '../../source/repo-reader.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { planPathIn } from '../repository-args.js';
import { deviceNameProblem, formatLabels, labelsFromArgs, type Labels } from '../../core/labels.js';
import { parseGitRepo } from '../../source/git-repo-location.js';
import { trustSetting } from '../trust-args.js';
import type { RolloutRecall } from '../../agent/rollout-gate.js';

export const AGENT_USAGE =
  'keystone agent [--config /etc/keystone/agent.toml]   (a TOML file of these flags; flags given here win)\n' +
  '               (--repo URL|PATH [--ref main] [--poll 60s] [--git-token-file F] | --dir PATH) [--plan PLAN]\n' +
  '               [--device NAME] [--label KEY=VALUE…]   (without --plan, fleet.toml picks the plan by name and labels)\n' +
  '               (--trusted-key FILE… [--threshold K] [--max-age D] [--max-clock-skew 5m] | --allow-unsigned)\n' +
  '               [--status git-notes,github|none] [--status-repo URL|PATH] [--github-repo OWNER/REPO] [--github-token-file F] [--github-api URL]\n' +
  '               [--webhook-secret-file F] [--allow-history-rewrite] [--on-failure none|rollback]\n' +
  `               ${POLICY_USAGE}\n` +
  '               [--state-dir /var/lib/keystone] [--concurrency N] [--grace 10s] [--log-format pretty|json] [--stop-on-exit]\n' +
  '               [--listen 127.0.0.1:8080|none] [--listen-public] [--socket PATH] [--no-dashboard]\n' +
  '               [--max-backoff 60s] [--crash-loop-limit 10] [--healthy-spell 10m] [--settle 300ms]\n' +
  '               [--log-max-bytes 10485760] [--log-keep 5]';

/** SPEC §9: loopback, so that only this machine reaches the API unless the operator says otherwise. */
const DEFAULT_LISTEN = '127.0.0.1:8080';

/** 2 GiB: artifacts are programs and images, not datasets. */
const MAX_ARTIFACT_BYTES = 2 * 1024 ** 3;

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number ≥ 1, not "${text}"`);
  return n;
}

/** A secret from a file (first line, trimmed) or an environment variable; never from the command line. */
export function secretFrom(file: string | undefined, envValue: string | undefined, what: string): string | undefined {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new UsageError(`cannot read the ${what} file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    const secret = text.split('\n', 1)[0]!.trim();
    if (!secret) throw new UsageError(`the ${what} file ${file} is empty`);
    return secret;
  }
  return envValue ? envValue.trim() : undefined;
}

/**
 * Artifacts (fetch, verify, unpack: tar, yauzl) are loaded when a component first has some to install: most devices
 * run programs already on disk.
 */
function lazyArtifactInstaller(opts: ArtifactInstallerOptions): InstallArtifactsFn {
  let installer: Promise<InstallArtifactsFn> | undefined;
  return async (c, workDir) => {
    installer ??= import('../../runtime/artifact-installer.js').then((m) => m.artifactInstaller(opts));
    return (await installer)(c, workDir);
  };
}

const MiB = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

/**
 * KEYSTONE_MEMORY_PHASES=1: one `memory` log line per start-up phase (process.memoryUsage() in MiB), and one a
 * minute after, to see what each phase and feature costs on a device. Off by default.
 */
function memoryPhases(env: NodeJS.ProcessEnv, log: Logger): { mark(phase: string): void; close(): void } {
  if (env.KEYSTONE_MEMORY_PHASES !== '1') return { mark: () => undefined, close: () => undefined };
  const mark = (phase: string) => {
    const m = process.memoryUsage();
    log.info({ phase, rss_mib: MiB(m.rss), heap_used_mib: MiB(m.heapUsed), heap_total_mib: MiB(m.heapTotal), external_mib: MiB(m.external), array_buffers_mib: MiB(m.arrayBuffers) }, 'memory');
  };
  mark('modules loaded');
  const timer = setInterval(() => mark('running'), 60_000);
  timer.unref();
  return { mark, close: () => clearInterval(timer) };
}

export async function agentCommand(argv: string[], io: CliIo, signals: { once(ev: 'stop', fn: () => void): void }): Promise<number> {
  const { values, positionals, configFile } = parseAgentOptions(argv, io);
  // Listening from the start: a stop asked for while the agent is still starting must not be lost.
  const stopRequested = new Promise<void>((resolveStop) => signals.once('stop', resolveStop));
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if ((values.repo === undefined) === (values.dir === undefined)) throw new UsageError('give one source: --repo URL|PATH (Git) or --dir PATH (a development directory)');
  if (values.plan === '') throw new UsageError('--plan takes a plan file; leave it out to take the plan from fleet.toml');
  const gitFlags = ['ref', 'poll', 'git-token-file', 'status', 'status-repo', 'github-repo', 'github-token-file', 'github-api', 'webhook-secret-file'] as const;
  const misplaced = gitFlags.find((f) => values[f] !== undefined) ?? (values['allow-history-rewrite'] || values['on-failure'] !== 'none' ? 'allow-history-rewrite or --on-failure' : undefined);
  if (values.dir !== undefined && misplaced) throw new UsageError(`--${misplaced} is for a Git source (--repo), not --dir`);
  if (values['on-failure'] !== 'none' && values['on-failure'] !== 'rollback') throw new UsageError(`--on-failure must be none or rollback, not "${values['on-failure']}"`);
  const gitUrl = values.repo !== undefined && /^https?:\/\//i.test(values.repo);
  const repo = values.repo === undefined ? undefined : gitUrl ? values.repo : resolve(io.cwd, values.repo);
  const root = values.dir === undefined ? undefined : resolve(io.cwd, values.dir);
  // The plan is a path inside the repository: for a Git source it is read from each commit's tree.
  const planFile = values.plan === undefined ? undefined : root !== undefined ? planPathIn(root, values.plan) : values.plan.split('\\').join('/').replace(/^\.\//, '');
  const pollMs = parseDuration(values.poll ?? '60s');
  if (pollMs === undefined || pollMs <= 0) throw new UsageError(`--poll takes a duration such as 60s, not "${values.poll}"`);
  const gitToken = secretFrom(values['git-token-file'] && resolve(io.cwd, values['git-token-file']), io.env.KEYSTONE_GIT_TOKEN, 'Git token');
  const githubToken = secretFrom(values['github-token-file'] && resolve(io.cwd, values['github-token-file']), io.env.KEYSTONE_GITHUB_TOKEN, 'GitHub token');
  const webhookSecret = secretFrom(values['webhook-secret-file'] && resolve(io.cwd, values['webhook-secret-file']), io.env.KEYSTONE_WEBHOOK_SECRET, 'webhook secret');
  const ref = values.ref ?? 'main';
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
  const device = values.device ?? hostname();
  // It names the device's reports (`keystone/<device>`) and fleet.toml's `devices`: one printable word.
  const badDevice = deviceNameProblem(device);
  if (badDevice) throw new UsageError(`--device: ${badDevice}`);
  let labels: Labels;
  try {
    labels = labelsFromArgs(values.label ?? []);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const stateDir = resolve(io.cwd, values['state-dir']);
  const trust: TrustSetting = trustSetting(values, io);
  const policy = devicePolicyFrom(values);
  const concurrency = values.concurrency === undefined ? availableParallelism() : Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency must be a whole number ≥ 1, not "${values.concurrency}"`);
  const graceMs = parseDuration(values.grace);
  const settleMs = parseDuration(values.settle);
  if (graceMs === undefined || settleMs === undefined) throw new UsageError('--grace and --settle take durations such as 10s');
  const maxBackoffMs = parseDuration(values['max-backoff']);
  const healthySpellMs = parseDuration(values['healthy-spell']);
  const crashLoopLimit = Number(values['crash-loop-limit']);
  if (maxBackoffMs === undefined || healthySpellMs === undefined || !Number.isInteger(crashLoopLimit) || crashLoopLimit < 1)
    throw new UsageError('--max-backoff and --healthy-spell take durations, --crash-loop-limit a whole number ≥ 1');
  const restartLimits = { ...DEFAULT_RESTART_LIMITS, maxBackoffMs, healthySpellMs, crashLoopLimit };
  let listen: ListenAddress | undefined;
  try {
    listen = parseListenAddress(values.listen ?? DEFAULT_LISTEN);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // Loopback unless the operator says otherwise in so many words: the API steers every component on the device.
  if (listen && !isLoopbackAddress(listen) && !values['listen-public'])
    throw new UsageError(`--listen ${values.listen} is not a loopback address: add --listen-public to expose the API beyond this machine`);
  const socketPath = values.socket === undefined ? undefined : resolve(io.cwd, values.socket);
  const format = values['log-format'] ?? (io.stdout.isTTY ? 'pretty' : 'json');
  if (format !== 'pretty' && format !== 'json') throw new UsageError(`--log-format must be pretty or json, not "${format}"`);
  const logger = createLogger({ pretty: format === 'pretty', write: (l) => io.stdout.write(l) });
  const log = logger.child({ module: 'agent' });
  const memory = memoryPhases(io.env, logger.child({ module: 'memory' }));
  // A bug in a background task must be seen, not kill supervision silently.
  const onUnhandled = (reason: unknown) => log.error({ err: reason as Error }, 'unhandled error in a background task');
  process.on('unhandledRejection', onUnhandled);

  // Relative artifacts are read from the revision being applied (they are pinned by digest, not listed in SHA256SUMS).
  let artifactReader: RepoReader | undefined;
  const boundProbes = new Map<string, BoundProbe | undefined>();
  // A log reader that goes away (a closed pipe) must not take supervision down with it.
  io.stdout.on?.('error', () => undefined);
  const tag = ownerTag(stateDir);
  // The state directory is guarded too: a container that mounts it holds the API token.
  const policyHost = hostPolicyFacts({ stateDir, env: io.env });
  const processRuntime = new ProcessRuntime({
    ownerTag: tag,
    allowRoot: policy.allowRoot,
    installArtifacts: lazyArtifactInstaller({
      reader: () => artifactReader!,
      cacheDir: join(stateDir, 'cache'),
      maxBytes: MAX_ARTIFACT_BYTES,
    }),
  });
  if (processRuntime.privilegeNote) log.warn(processRuntime.privilegeNote);
  // Containers: the engine is found when a container component first needs it (a device without one runs processes).
  const containerRuntime = new ContainerRuntime({
    ownerTag: tag,
    policy,
    policyHost,
    installArtifacts: lazyArtifactInstaller({ reader: () => artifactReader!, cacheDir: join(stateDir, 'cache'), maxBytes: MAX_ARTIFACT_BYTES }),
    log: logger.child({ module: 'containers' }),
    // For `keystonectl apply`'s display: a line a second per component while bytes flow, and every other status.
    onPullProgress: (component, p) => {
      const t = Date.now();
      const downloading = p.status === 'Downloading' || p.status === 'Extracting';
      const last = lastPull.get(component);
      if (last && (downloading ? t - last.at < 1000 : last.status === p.status)) return;
      lastPull.set(component, { at: t, status: p.status });
      try {
        agentRef?.events.emit('pull', { component, image: p.image, status: p.status, currentBytes: p.currentBytes, totalBytes: p.totalBytes });
      } catch (e) {
        log.error({ err: e as Error }, 'a pull progress listener failed');
      }
    },
  });
  const lastPull = new Map<string, { at: number; status: string }>();
  let agentRef: Agent | undefined;
  const runtimeOf = (c: DesiredComponent) => (c.recipe.lifecycle.run.type === 'container' ? containerRuntime : processRuntime);
  if (trust.unsigned) log.warn('running UNSIGNED (--allow-unsigned): every revision is applied without a signature check; development only');

  // The Git modules (isomorphic-git) are loaded only when the agent follows Git.
  const gitModules =
    repo !== undefined
      ? await Promise.all([import('./agent-git.js'), import('../../agent/rollout-gate.js'), import('../../source/ref-lister.js')]).then(([g, r, l]) => ({ followGit: g.followGit, RolloutGate: r.RolloutGate, refListerFor: l.refListerFor }))
      : undefined;
  // Before anything in the state directory is read or adopted: it is checked and locked (one agent per state
  // directory), and the API's address is tried, so that an agent that cannot run touches nothing.
  const stateDirLock = openStateDir(stateDir);
  try {
    if (listen) await checkListenAddress(listen);
  } catch (e) {
    stateDirLock.release();
    throw listenFailed(listen && formatListenAddress(listen), undefined, e);
  }
  // Staged rollouts (SPEC §14) read the fleet's rollout refs where the Git notes go: the reports repository, else
  // the followed one. A device that sends no Git notes cannot take part: it holds such commits and says why.
  const statusNames = (values.status ?? 'git-notes').split(',').map((x) => x.trim()).filter(Boolean);
  const reportsRepo = statusRepo ?? repo;
  const rolloutGate =
    gitModules !== undefined && reportsRepo !== undefined && statusNames.includes('git-notes')
      ? (store: RolloutRecall) =>
          new gitModules.RolloutGate({ refs: gitModules.refListerFor(reportsRepo, { ...(gitToken !== undefined && { token: gitToken }), now: Date.now }), store, now: Date.now, random: Math.random })
      : undefined;
  const agent = (agentRef = await startAgent({
    stateDirLock,
    ...(rolloutGate && { rolloutGate }),
    ...(!rolloutGate && { rolloutUnavailable: 'this device sends no Git notes (--status git-notes), so it cannot see the waves before it' }),
    gateRecheckMs: pollMs,
    ...(planFile !== undefined && { planFile }),
    fleet: { device, labels },
    stateDir,
    trust,
    log: logger,
    runtimes: { process: processRuntime, container: containerRuntime },
    check: (state) => checkDevice(state, { policy, host: policyHost, containers: containerRuntime, processes: processRuntime, paths: (name) => componentPaths(stateDir, name) }),
    probe: async (c, paths, _timeoutMs, signal) => {
      // Bind each component's probe once per hash: binding resolves the run user from /etc/passwd,
      // which is too costly to repeat on every probe (a profile showed 13 % of the agent's CPU).
      const key = `${c.name}\0${c.hash}`;
      let bound = boundProbes.get(key);
      if (!boundProbes.has(key)) {
        bound = await runtimeOf(c).healthProbe(c, paths);
        boundProbes.set(key, bound);
      }
      return bound ? bound(signal) : { ok: true, detail: 'no health check', latencyMs: 0 };
    },
    concurrency,
    graceMs,
    restartLimits,
    ownerTag: tag,
    following: repo !== undefined ? 'git' : 'directory',
    useReader: (r) => (artifactReader = r),
    logMaxBytes: positiveInt(values['log-max-bytes'], '--log-max-bytes'),
    logKeep: positiveInt(values['log-keep'], '--log-keep'),
  }));
  memory.mark('agent started');
  // The source offers revisions (and POST /v1/sync asks it to look now); it never offers the same content twice.
  let source: { start(): Promise<void>; close(): Promise<void> };
  try {
    if (repo !== undefined && gitModules !== undefined) {
      const following = gitModules.followGit(agent, {
        repo,
        ref,
        stateDir,
        ...(planFile !== undefined && { planFile }),
        device,
        labels,
        pollMs,
        ...(gitToken !== undefined && { token: gitToken }),
        allowHistoryRewrite: values['allow-history-rewrite'],
        onFailure: values['on-failure'] as 'none' | 'rollback',
        ...(statusRepo !== undefined && { statusRepo }),
        status: statusNames,
        github: { ...(values['github-repo'] !== undefined && { repo: values['github-repo'] }), ...(githubToken !== undefined && { token: githubToken }), ...(values['github-api'] !== undefined && { apiBase: values['github-api'] }) },
        log: logger,
        random: Math.random,
        now: Date.now,
      });
      source = { start: () => following.start(), close: () => following.close() };
    } else {
      // chokidar only in directory mode.
      const { DirectorySource } = await import('../../source/directory-source.js');
      const dir = new DirectorySource(root!, {
        settleMs,
        onRevision: (r: Revision) => agent.offer(r),
        onError: (e) => log.error({ err: e }, 'watching the directory failed'),
      });
      agent.onSync(() => dir.syncNow());
      source = dir;
    }
  } catch (e) {
    await agent.close();
    throw e;
  }
  let api: ApiListeners | undefined;
  try {
    api = await startApi(agent, {
      stateDir,
      listen,
      public: values['listen-public'],
      socketPath,
      log: logger,
      ...(webhookSecret !== undefined && { webhook: { secret: webhookSecret, ref } }),
      policy,
      dashboard: values.dashboard,
    });
  } catch (e) {
    await source.close();
    await agent.close();
    throw e;
  }
  log.info({ ...(configFile !== undefined && { config: configFile }), ...(root !== undefined ? { dir: root } : { repo: values.repo, ref }), plan: planFile ?? 'from fleet.toml', state_dir: stateDir, device, ...(Object.keys(labels).length > 0 && { labels: formatLabels(labels) }), concurrency }, 'agent started');
  const grants = describeDevicePolicy(policy);
  log.info({ policy: grants.length ? grants : 'safe defaults only' }, 'device policy');
  // Adopted, not started: a process an earlier version (or an --allow-root run) started as root keeps running as root
  // until it restarts. Said loudly rather than restarted behind the operator's back (the agent's own restart never
  // restarts a healthy component).
  if (!policy.allowRoot && (process.getuid?.() ?? 0) === 0)
    for (const rec of agent.store.components())
      if (rec.instance?.kind === 'process' && isSameProcess(rec.instance.pid, rec.instance.startTime) && processUid(rec.instance.pid) === 0)
        log.warn(
          { component: rec.name, pid: rec.instance.pid },
          'runs as root, started before this device refused root process users: `keystonectl restart` it (or apply a revision that changes it) to run it as its recipe user or the unprivileged default',
        );
  memory.mark('API started');
  await source.start();
  memory.mark('source started');
  await stopRequested;
  memory.close();
  log.info(values['stop-on-exit'] ? 'stopping: components are stopped too (--stop-on-exit)' : 'stopping: components keep running and are adopted at the next start');
  // The API first: calls still waiting answer now, and nothing new reaches the engine while it winds down.
  await api?.close();
  await source.close();
  await agent.close({ stopComponents: values['stop-on-exit'] });
  // Containers keep running; the runtime only stops following their exits and logs (it saves where it got to).
  await containerRuntime.close();
  process.off('unhandledRejection', onUnhandled);
  return EXIT.OK;
}

/** The token file, the server and its listeners; undefined when there is nothing to listen on (`--listen none`, no socket). */
async function startApi(
  agent: Agent,
  opts: { stateDir: string; listen: ListenAddress | undefined; public: boolean; socketPath: string | undefined; log: Logger; webhook?: { secret: string; ref: string }; policy: DevicePolicy; dashboard: boolean },
): Promise<ApiListeners | undefined> {
  const log = opts.log.child({ module: 'api' });
  if (!opts.listen && opts.socketPath === undefined) {
    log.info('the HTTP API is off (--listen none)');
    return undefined;
  }
  const token = ensureApiToken(opts.stateDir);
  // Where the token is, never what it is.
  log.info({ path: token.path }, token.created ? 'created the API token' : 'using the existing API token');
  if (token.worldAccessible) log.warn({ path: token.path }, 'the API token file is readable by every user: chmod 600 it');
  // The HTTP server (fastify, prom-client) is loaded only when the API listens somewhere.
  const [{ buildServer }, { listenApi }] = await Promise.all([import('../../api/build-server.js'), import('../../api/listen-api.js')]);
  const server = buildServer({
    agent,
    token: token.token,
    log: opts.log,
    ...(opts.webhook && { webhook: opts.webhook }),
    policy: opts.policy,
    ...(opts.listen && opts.public && { isAllowedHost: publicHostAllowance(opts.listen, [hostname()]) }),
    ...(!opts.dashboard && { dashboard: false as const }),
  });
  let listeners: ApiListeners;
  try {
    // An address that is in use is an error, never an API quietly turned off: keystonectl would talk to whatever
    // holds it (another agent, with its own token and components).
    listeners = await listenApi(server, { ...(opts.listen && { tcp: opts.listen }), ...(opts.socketPath !== undefined && { socketPath: opts.socketPath }) });
  } catch (e) {
    await server.close();
    throw listenFailed(opts.listen && formatListenAddress(opts.listen), opts.socketPath, e);
  }
  if (opts.listen && !isLoopbackAddress(opts.listen))
    log.warn({ listen: formatListenAddress(opts.listen) }, 'the HTTP API listens beyond this machine (--listen-public): anyone who can reach it can read the device state; actions still need the token');
  log.info({ addresses: listeners.addresses }, 'HTTP API listening');
  // The address a person opens (the first TCP one; a socket alone has none a browser can use), and where the token is.
  const page = listeners.addresses.find((a) => a.startsWith('http://'));
  if (opts.dashboard && page !== undefined) log.info({ url: `${page}/`, token: token.path }, 'dashboard: open the url and sign in with the token in the file');
  return listeners;
}

/** KS_API_LISTEN_FAILED: where, why, and the flags that choose another address or none. */
function listenFailed(tcp: string | undefined, socketPath: string | undefined, e: unknown): OperationError {
  const where = [tcp, socketPath].filter(Boolean).join(' and ');
  const why = (e as NodeJS.ErrnoException).code === 'EADDRINUSE' && tcp !== undefined ? 'the address is in use (another agent or program listens on it)' : (e as Error).message;
  const fix = tcp !== undefined ? 'pass --listen HOST:PORT for another address, or --listen none to run without the TCP API' : 'pass --socket with another path';
  return new OperationError('KS_API_LISTEN_FAILED', `the HTTP API cannot listen on ${where}: ${why}; ${fix}`);
}
