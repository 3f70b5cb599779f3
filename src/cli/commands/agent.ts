// `keystone agent`: follow a desired-state source and keep this device converged on it, until SIGINT/SIGTERM.
import type { ApiAgent } from '../../api/api-deps.js';
import { SecretVault } from '../../secrets/secret-vault.js';
import { hostname } from 'node:os';
import type { Agent } from '../../agent/agent.js';
import { runAgent } from '../../agent/run-agent.js';
import type { EnrollmentSettings, IdentitySettings } from '../../agent/run-settings.js';
import { ensureApiToken } from '../../api/api-token.js';
import { checkListenAddress } from '../../api/check-listen-address.js';
import {
  formatListenAddress,
  isLoopbackAddress,
  publicHostAllowance,
  type ListenAddress,
} from '../../api/listen-address.js';
import type { ApiListeners } from '../../api/listen-api.js';
import { describeDevicePolicy, type DevicePolicy } from '../../core/device-policy.js';
import { OperationError } from '../../core/errors.js';
import { formatLabels } from '../../core/labels.js';
import { ensureDeviceKeys, identityPaths } from '../../identity/device-keys.js';
import { createLogger, type Logger } from '../../log/logger.js';
import { checkAgentFlags } from '../agent-flags.js';
import { parseAgentOptions } from '../agent-options.js';
import { agentSettings } from '../agent-settings.js';
import { EXIT, nowMs, random, type CliIo } from '../io.js';
import { ENGINE_USAGE } from '../engine-args.js';
import { POLICY_USAGE } from '../policy-args.js';
import { checkAgentFiles, trustedFilesOf } from '../trusted-files.js';

// `keystone doctor` and `keystonectl fleet` read secrets the agent's way.
export { secretFrom } from '../secret-file.js';

export const AGENT_USAGE =
  'keystone agent [--config /etc/keystone/agent.toml]   (a TOML file of these flags; flags given here win)\n' +
  '               (--repo URL|PATH [--ref main] [--poll 60s] [--git-token-file F] | --dir PATH) [--plan PLAN]\n' +
  '               [--device NAME] [--label KEY=VALUE…]   (without --plan, fleet.toml picks the plan by name and labels)\n' +
  '               (--trusted-key FILE… [--threshold K] [--max-age D] [--max-clock-skew 5m] [--require-ref] | --allow-unsigned)\n' +
  "               [--enrollment-key FILE…] [--certificate FILE]   (the device's own keys: <state-dir>/identity, keystone identity)\n" +
  '               [--status git-notes,github|none] [--status-repo URL|PATH] [--status-token-file F] [--github-repo OWNER/REPO] [--github-token-file F] [--github-api URL]\n' +
  '               [--webhook-secret-file F] [--allow-history-rewrite] [--on-failure none|rollback]\n' +
  `               ${POLICY_USAGE} [--allow-agent-update]\n` +
  `               ${ENGINE_USAGE}\n` +
  '               [--state-dir /var/lib/keystone] [--concurrency N] [--grace 10s] [--log-format pretty|json] [--stop-on-exit]\n' +
  '               [--listen 127.0.0.1:8080|none] [--listen-public] [--socket PATH] [--no-dashboard]\n' +
  '               [--max-backoff 60s] [--crash-loop-limit 10] [--healthy-spell 10m] [--settle 300ms]\n' +
  '               [--window "mon,tue 02:00-04:00 Europe/Berlin"]\n' +
  '               [--log-max-bytes 10485760] [--log-keep 5]';

const MiB = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

/**
 * KEYSTONE_MEMORY_PHASES=1: one `memory` log line per start-up phase (process.memoryUsage() in MiB), and one a
 * minute after, to see what each phase and feature costs on a device. Off by default.
 */
function memoryPhases(env: NodeJS.ProcessEnv, log: Logger): { mark(phase: string): void; close(): void } {
  if (env.KEYSTONE_MEMORY_PHASES !== '1') return { mark: () => undefined, close: () => undefined };
  const mark = (phase: string) => {
    const m = process.memoryUsage();
    log.info(
      {
        phase,
        rss_mib: MiB(m.rss),
        heap_used_mib: MiB(m.heapUsed),
        heap_total_mib: MiB(m.heapTotal),
        external_mib: MiB(m.external),
        array_buffers_mib: MiB(m.arrayBuffers),
      },
      'memory',
    );
  };
  mark('modules loaded');
  const timer = setInterval(() => mark('running'), 60_000);
  timer.unref();
  return { mark, close: () => clearInterval(timer) };
}

/** Parse and check (the file as it is read, then the flags: cli/agent-flags.ts), run (agent/run-agent.ts), serve the API, and wait for a stop. */
export async function agentCommand(
  argv: string[],
  io: CliIo,
  signals: { once(ev: 'stop', fn: () => void): void },
): Promise<number> {
  const parsed = parseAgentOptions(argv, io);
  const { values, configFile } = parsed;
  // Listening from the start: a stop asked for while the agent is still starting must not be lost.
  const stopRequested = new Promise<void>((resolveStop) => signals.once('stop', resolveStop));
  // Before any key or secret is read: a key another user could change is refused (exit 2); a secret, warned about.
  const exposedSecrets = checkAgentFiles(trustedFilesOf(values, io, configFile));
  // Each flag through its key's rule, once (the file's values went through theirs as it was read); then only converted.
  const settings = agentSettings(checkAgentFlags(argv, parsed, io), io);
  const { run, listen } = settings;
  // Secret values (SPEC §16) live in the vault, in memory; every log line is scrubbed of them, whatever quoted one.
  const vault = new SecretVault();
  const logger = createLogger({
    pretty: settings.logFormat === 'pretty',
    write: (l) => io.stdout.write(l),
    scrub: (l) => vault.scrub(l),
    scrubbing: () => vault.holdsAny,
  });
  const log = logger.child({ module: 'agent' });
  for (const p of exposedSecrets)
    log.warn(
      { path: p.file, code: p.code, fix: p.fix },
      `${p.problem}: another user could read or replace this secret`,
    );
  const memory = memoryPhases(io.env, logger.child({ module: 'memory' }));
  // A bug in a background task must be seen, not kill supervision silently.
  const onUnhandled = (reason: unknown) => log.error({ err: reason as Error }, 'unhandled error in a background task');
  process.on('unhandledRejection', onUnhandled);
  // A log reader that goes away (a closed pipe) must not take supervision down with it.
  io.stdout.on?.('error', () => undefined);
  const running = await runAgent(run, {
    logger,
    vault,
    env: io.env,
    // The device's keys, then the API's address, before anything else in the state directory is read or adopted: a
    // device whose keys are unsafe or gone does not start (IdentityError: exit code 2), and touches nothing that runs.
    beforeAdopt: async () => {
      run.identity = await deviceIdentity(run.stateDir, settings.enrollment, io, log);
      try {
        if (listen) await checkListenAddress(listen);
      } catch (e) {
        throw listenFailed(listen && formatListenAddress(listen), undefined, e);
      }
    },
  });
  const { agent } = running;
  memory.mark('agent started');
  let api: ApiListeners | undefined;
  try {
    // GET /v1/revision's agent.update (SPEC §17), read at each request.
    api = await startApi(
      { ...agent, agentUpdate: running.agentUpdate },
      {
        stateDir: run.stateDir,
        listen,
        public: settings.listenPublic,
        socketPath: settings.socketPath,
        log: logger,
        ...(settings.webhookSecret !== undefined &&
          run.source.kind === 'git' && { webhook: { secret: settings.webhookSecret, ref: run.source.ref } }),
        policy: run.policy,
        dashboard: settings.dashboard,
      },
    );
  } catch (e) {
    await running.close({ stopComponents: false });
    throw e;
  }
  const src = run.source;
  log.info(
    {
      ...(configFile !== undefined && { config: configFile }),
      ...(src.kind === 'dir' ? { dir: src.root } : { repo: values.repo, ref: src.ref }),
      plan: run.planFile ?? 'from fleet.toml',
      state_dir: run.stateDir,
      device: run.device,
      ...(Object.keys(run.labels).length > 0 && { labels: formatLabels(run.labels) }),
      concurrency: run.concurrency,
    },
    'agent started',
  );
  const grants = describeDevicePolicy(run.policy);
  log.info({ policy: grants.length ? grants : 'safe defaults only' }, 'device policy');
  memory.mark('API started');
  await running.start();
  memory.mark('source started');
  await stopRequested;
  memory.close();
  log.info(
    settings.stopOnExit
      ? 'stopping: components are stopped too (--stop-on-exit)'
      : 'stopping: components keep running and are adopted at the next start',
  );
  // The API first: calls still waiting answer now, and nothing new reaches the engine while it winds down.
  await api?.close();
  await running.close({ stopComponents: settings.stopOnExit });
  process.off('unhandledRejection', onUnhandled);
  return EXIT.OK;
}

/** The device's keys (made at its first start) with the enrolment settings; the public halves logged, never the secrets. */
async function deviceIdentity(
  stateDir: string,
  enrollment: EnrollmentSettings,
  io: CliIo,
  log: Logger,
): Promise<IdentitySettings> {
  const { keys, created } = await ensureDeviceKeys(stateDir, {
    now: () => nowMs(io),
    randomBytes: random(io),
    create: true,
  });
  const fields = { path: identityPaths(stateDir).dir, report_key: keys.reportPublic, age_recipient: keys.ageRecipient };
  if (created) log.info(fields, 'created the device identity: keystone identity prints it, for keystonectl enroll');
  else log.info(fields, 'device identity');
  return { keys, ...enrollment };
}

/** The token file, the server and its listeners; undefined when there is nothing to listen on (`--listen none`, no socket). */
async function startApi(
  agent: Agent & Pick<ApiAgent, 'agentUpdate'>,
  opts: {
    stateDir: string;
    listen: ListenAddress | undefined;
    public: boolean;
    socketPath: string | undefined;
    log: Logger;
    webhook?: { secret: string; ref: string };
    policy: DevicePolicy;
    dashboard: boolean;
  },
): Promise<ApiListeners | undefined> {
  const log = opts.log.child({ module: 'api' });
  if (!opts.listen && opts.socketPath === undefined) {
    log.info('the HTTP API is off (--listen none)');
    return undefined;
  }
  const token = ensureApiToken(opts.stateDir);
  // Where the token is, never what it is.
  log.info({ path: token.path }, token.created ? 'created the API token' : 'using the existing API token');
  if (token.readableByOthers)
    log.warn(
      { path: token.path, code: 'KS_SECRET_FILE_UNSAFE', fix: `chmod 600 ${token.path}` },
      'the API token file is readable by other users: chmod 600 it',
    );
  // The HTTP server and its metrics are loaded only when the API listens somewhere.
  const [{ buildServer }, { listenApi }] = await Promise.all([
    import('../../api/build-server.js'),
    import('../../api/listen-api.js'),
  ]);
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
    listeners = await listenApi(server, {
      ...(opts.listen && { tcp: opts.listen }),
      ...(opts.socketPath !== undefined && { socketPath: opts.socketPath }),
    });
  } catch (e) {
    await server.close();
    throw listenFailed(opts.listen && formatListenAddress(opts.listen), opts.socketPath, e);
  }
  if (opts.listen && !isLoopbackAddress(opts.listen))
    log.warn(
      { listen: formatListenAddress(opts.listen) },
      'the HTTP API listens beyond this machine (--listen-public): anyone who can reach it can read the device state; actions still need the token',
    );
  log.info({ addresses: listeners.addresses }, 'HTTP API listening');
  // The address a person opens (the first TCP one; a socket alone has none a browser can use), and where the token is.
  const page = listeners.addresses.find((a) => a.startsWith('http://'));
  if (opts.dashboard && page !== undefined)
    log.info({ url: `${page}/`, token: token.path }, 'dashboard: open the url and sign in with the token in the file');
  return listeners;
}

/** KS_API_LISTEN_FAILED: where, why, and the flags that choose another address or none. */
function listenFailed(tcp: string | undefined, socketPath: string | undefined, e: unknown): OperationError {
  const where = [tcp, socketPath].filter(Boolean).join(' and ');
  const why =
    (e as NodeJS.ErrnoException).code === 'EADDRINUSE' && tcp !== undefined
      ? 'the address is in use (another agent or program listens on it)'
      : (e as Error).message;
  const fix =
    tcp !== undefined
      ? 'pass --listen HOST:PORT for another address, or --listen none to run without the TCP API'
      : 'pass --socket with another path';
  return new OperationError('KS_API_LISTEN_FAILED', `the HTTP API cannot listen on ${where}: ${why}; ${fix}`);
}
