// `keystone agent`: follow a desired-state source and keep this device converged on it, until SIGINT/SIGTERM.
import { availableParallelism, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startAgent, type TrustSetting } from '../../agent/agent.js';
import { ownerTag } from '../../agent/orphan-sweep.js';
import { parseDuration } from '../../core/duration.js';
import { DEFAULT_RESTART_LIMITS } from '../../core/restart-policy.js';
import { createLogger } from '../../log/logger.js';
import { artifactInstaller } from '../../runtime/artifact-installer.js';
import { ProcessRuntime } from '../../runtime/process-runtime.js';
import { DirectorySource, type Revision } from '../../source/directory-source.js';
import type { RepoReader } from '../../source/repo-reader.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { planPathIn } from '../repository-args.js';
import { TRUST_OPTIONS, trustSetting } from '../trust-args.js';

export const AGENT_USAGE =
  'keystone agent --dir PATH --plan PLAN (--trusted-key FILE… [--threshold K] [--max-age D] | --allow-unsigned)\n' +
  '               [--state-dir /var/lib/keystone] [--device NAME] [--concurrency N] [--grace 10s] [--log-format pretty|json] [--stop-on-exit]\n' +
  '               [--max-backoff 60s] [--crash-loop-limit 10] [--healthy-spell 10m] [--settle 300ms]\n' +
  '               [--log-max-bytes 10485760] [--log-keep 5]';

/** 2 GiB: artifacts are programs and images, not datasets. */
const MAX_ARTIFACT_BYTES = 2 * 1024 ** 3;

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number ≥ 1, not "${text}"`);
  return n;
}

export async function agentCommand(argv: string[], io: CliIo, signals: { once(ev: 'stop', fn: () => void): void }): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dir: { type: 'string' },
      repo: { type: 'string' },
      plan: { type: 'string' },
      ref: { type: 'string' },
      'state-dir': { type: 'string', default: '/var/lib/keystone' },
      listen: { type: 'string' },
      device: { type: 'string' },
      poll: { type: 'string' },
      concurrency: { type: 'string' },
      grace: { type: 'string', default: '10s' },
      'log-format': { type: 'string' },
      'stop-on-exit': { type: 'boolean', default: false },
      settle: { type: 'string', default: '300ms' },
      'max-backoff': { type: 'string', default: '60s' },
      'crash-loop-limit': { type: 'string', default: '10' },
      'healthy-spell': { type: 'string', default: '10m' },
      'log-max-bytes': { type: 'string', default: '10485760' },
      'log-keep': { type: 'string', default: '5' },
      ...TRUST_OPTIONS,
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values.repo !== undefined) throw new UsageError('--repo (Git sources) is not available in this version yet: use --dir PATH');
  if (!values.dir) throw new UsageError('--dir PATH is required');
  if (!values.plan) throw new UsageError('--plan PLAN is required');
  const root = resolve(io.cwd, values.dir);
  const planFile = planPathIn(root, values.plan);
  const stateDir = resolve(io.cwd, values['state-dir']);
  const trust: TrustSetting = trustSetting(values, io);
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
  const format = values['log-format'] ?? (io.stdout.isTTY ? 'pretty' : 'json');
  if (format !== 'pretty' && format !== 'json') throw new UsageError(`--log-format must be pretty or json, not "${format}"`);
  const logger = createLogger({ pretty: format === 'pretty', write: (l) => io.stdout.write(l) });
  const log = logger.child({ module: 'agent' });
  // A bug in a background task must be seen, not kill supervision silently.
  const onUnhandled = (reason: unknown) => log.error({ err: reason as Error }, 'unhandled error in a background task');
  process.on('unhandledRejection', onUnhandled);

  // Relative artifacts are read from the revision being applied (they are pinned by digest, not listed in SHA256SUMS).
  let artifactReader: RepoReader | undefined;
  const tag = ownerTag(stateDir);
  const processRuntime = new ProcessRuntime({
    ownerTag: tag,
    installArtifacts: artifactInstaller({
      reader: () => artifactReader!,
      cacheDir: join(stateDir, 'cache'),
      maxBytes: MAX_ARTIFACT_BYTES,
    }),
  });
  if (processRuntime.privilegeNote) log.warn(processRuntime.privilegeNote);
  if (trust.unsigned) log.warn('running UNSIGNED (--allow-unsigned): every revision is applied without a signature check; development only');

  const agent = await startAgent({
    planFile,
    stateDir,
    trust,
    log: logger,
    runtimes: { process: processRuntime },
    probe: async (c, paths, _timeoutMs, signal) => {
      const bound = await processRuntime.healthProbe(c, paths);
      return bound ? bound(signal) : { ok: true, detail: 'no health check', latencyMs: 0 };
    },
    concurrency,
    graceMs,
    restartLimits,
    ownerTag: tag,
    logMaxBytes: positiveInt(values['log-max-bytes'], '--log-max-bytes'),
    logKeep: positiveInt(values['log-keep'], '--log-keep'),
  });
  const source = new DirectorySource(root, {
    settleMs,
    onRevision: (r: Revision) => {
      artifactReader = r.reader;
      agent.offer(r);
    },
    onError: (e) => log.error({ err: e }, 'watching the directory failed'),
  });
  log.info({ dir: root, plan: planFile, state_dir: stateDir, device: values.device ?? hostname(), concurrency }, 'agent started');
  await source.start();
  await new Promise<void>((resolveStop) => signals.once('stop', resolveStop));
  log.info(values['stop-on-exit'] ? 'stopping: components are stopped too (--stop-on-exit)' : 'stopping: components keep running and are adopted at the next start');
  await source.close();
  await agent.close({ stopComponents: values['stop-on-exit'] });
  process.off('unhandledRejection', onUnhandled);
  return EXIT.OK;
}
