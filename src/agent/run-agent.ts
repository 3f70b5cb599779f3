// The composition root of `keystone agent`: from validated settings (run-settings.ts) to a running agent — the
// runtimes, the health probes, the state directory's lock, the rollout gate, the agent itself, and its source (Git,
// with its reports and rollback policy, or a watched directory). The CLI parses and validates (cli/agent-settings.ts),
// serves the API and waits for a stop; nothing here parses a flag.
import { ARTIFACT_CACHE_DIR } from '../state-dir/layout.js';
import { statfs } from 'node:fs/promises';
import { prefetch } from './prefetch.js';
import { reportSigner, type ReportSigner } from '../identity/report-signature.js';
import { join } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import type { Logger } from '../log/logger.js';
import { ContainerRuntime } from '../runtime/container-runtime.js';
import { checkDevice } from '../runtime/device-check.js';
import { hostPolicyFacts } from '../runtime/policy-host.js';
import { ProcessRuntime } from '../runtime/process-runtime.js';
import { chooseSecretsRoot } from '../runtime/secrets-root.js';
import type { Revision } from '../source/directory-source.js';
import type { RepoReader } from '../source/repo-reader.js';
import { componentPaths, startAgent, type Agent } from './agent.js';
import { ownerTag } from './orphan-sweep.js';
import type { RolloutRecall } from './rollout-gate.js';
import { reportsRemote, type RunSettings } from './run-settings.js';
import { openStateDir } from './state-dir.js';
import { SecretVault } from '../secrets/secret-vault.js';
import { SecretOpener } from '../secrets/open-secrets.js';
import { digestKeyOf } from '../secrets/secret-digest.js';
import { agentUpdater } from '../agent-update/agent-update-setup.js';
import type { AgentUpdateView } from '../agent-update/agent-home.js';
import { fetchArtifactsOf, lazyArtifactInstaller, MAX_ARTIFACT_BYTES } from './artifact-fetching.js';
import { cachedProbe } from './cached-probe.js';
import { pullProgressEvents } from './pull-progress-events.js';
import { warnRootProcesses } from './warn-root-processes.js';

export interface RunningAgent {
  agent: Agent;
  /** What GET /v1/revision's agent.update says (SPEC §17). */
  agentUpdate: () => AgentUpdateView | undefined;
  /** Starts following the source (the first look, or the device's place in the poll interval). */
  start(): Promise<void>;
  /** Stops looking, then the agent (its components too with `stopComponents`), then reporting and the container runtime's watches. */
  close(opts: { stopComponents: boolean }): Promise<void>;
}

export interface RunHooks {
  logger: Logger;
  /** The agent's environment (the host facts of the device policy read it). */
  env: NodeJS.ProcessEnv;
  /** Runs once the state directory is locked and before anything in it is read (the CLI tries the API's address). */
  beforeAdopt?: () => Promise<void>;
  /** The values of opened secrets (SPEC §16), kept in memory; the CLI's logger scrubs them from every line. */
  vault?: SecretVault;
  /** Tests: how the agent updates itself (agent-update-setup.ts by default). */
  agentUpdater?: typeof agentUpdater;
}

/** How this device signs its reports, and the certificate it publishes beside them (SPEC §15). */
function identityReporting(s: RunSettings): { reportSigner?: ReportSigner; certificate?: string } {
  if (!s.identity) return {};
  return {
    reportSigner: reportSigner(s.identity.keys.report),
    ...(s.identity.certificate && { certificate: s.identity.certificate.text }),
  };
}

export async function runAgent(s: RunSettings, hooks: RunHooks): Promise<RunningAgent> {
  const { logger } = hooks;
  const log = logger.child({ module: 'agent' });
  const { stateDir, policy } = s;
  const vault = hooks.vault ?? new SecretVault();
  // Relative artifacts are read from the revision being applied (they are pinned by digest, not listed in SHA256SUMS).
  let artifactReader: RepoReader | undefined;
  const installArtifacts = () =>
    lazyArtifactInstaller({
      reader: () => artifactReader!,
      cacheDir: join(stateDir, ARTIFACT_CACHE_DIR),
      maxBytes: MAX_ARTIFACT_BYTES,
    });
  const tag = ownerTag(stateDir);
  // The state directory is guarded too: a container that mounts it holds the API token.
  const policyHost = hostPolicyFacts({
    stateDir,
    env: hooks.env,
    ...(s.engineSockets && { sockets: s.engineSockets }),
  });
  // Secret files (SPEC §16) on tmpfs where the device has one, in a directory made at the first of them (both runtimes
  // share it); said once when they would be on disk.
  const secretsRoot = chooseSecretsRoot(stateDir);
  if (secretsRoot.warning) log.warn(secretsRoot.warning);
  const processRuntime = new ProcessRuntime({
    ownerTag: tag,
    allowRoot: policy.allowRoot,
    installArtifacts: installArtifacts(),
    secretsRoot,
    secrets: vault,
  });
  if (processRuntime.privilegeNote) log.warn(processRuntime.privilegeNote);
  let agentRef: Agent | undefined;
  // Containers: the engine is found when a container component first needs it (a device without one runs processes).
  const containerRuntime = new ContainerRuntime({
    ownerTag: tag,
    policy,
    policyHost,
    // --docker-socket (or DOCKER_HOST's), --podman-socket: checked at start (cli/engine-args.ts); else the defaults.
    env: hooks.env,
    ...(s.engineSockets && { socketPaths: s.engineSockets }),
    installArtifacts: installArtifacts(),
    secretsRoot,
    secrets: vault,
    log: logger.child({ module: 'containers' }),
    onPullProgress: pullProgressEvents(() => agentRef?.events, log),
  });
  const runtimeOf = (c: DesiredComponent) =>
    c.recipe.lifecycle.run.type === 'container' ? containerRuntime : processRuntime;
  if (s.trust.unsigned)
    log.warn(
      'running UNSIGNED (--allow-unsigned): every revision is applied without a signature check; development only',
    );

  // The Git modules (isomorphic-git) are loaded only when the agent follows Git.
  const git = s.source.kind === 'git' ? s.source : undefined;
  const gitModules = git
    ? await Promise.all([
        import('./follow-git.js'),
        import('./rollout-gate.js'),
        import('../source/ref-lister.js'),
      ]).then(([g, r, l]) => ({ followGit: g.followGit, RolloutGate: r.RolloutGate, refListerFor: l.refListerFor }))
    : undefined;
  // Before anything in the state directory is read or adopted: it is checked and locked (one agent per state
  // directory), and the caller's checks run, so that an agent that cannot run touches nothing.
  const stateDirLock = openStateDir(stateDir);
  try {
    await hooks.beforeAdopt?.();
  } catch (e) {
    stateDirLock.release();
    throw e;
  }
  // Staged rollouts (SPEC §14) read the fleet's rollout refs where the Git notes go: the reports repository, else
  // the followed one. A device that sends no Git notes cannot take part: it holds such commits and says why.
  const reports = git && reportsRemote(git);
  const rolloutGate =
    gitModules && git && reports && git.status.includes('git-notes')
      ? (store: RolloutRecall) =>
          new gitModules.RolloutGate({
            refs: gitModules.refListerFor(reports.repo, {
              ...(reports.token !== undefined && { token: reports.token }),
              now: Date.now,
            }),
            store,
            now: Date.now,
            random: Math.random,
          })
      : undefined;
  // Agent updates (SPEC §17): a packaged agent under systemd switches to the version a revision's [agent] names.
  const updater = (hooks.agentUpdater ?? agentUpdater)({
    stateDir,
    log: logger,
    store: () => agentRef!.store,
    now: Date.now,
    allowed: s.allowAgentUpdate === true,
  });
  const agent = (agentRef = await startAgent({
    agentUpdate: updater,
    stateDirLock,
    ...(rolloutGate && { rolloutGate }),
    ...(!rolloutGate && {
      rolloutUnavailable: 'this device sends no Git notes (--status git-notes), so it cannot see the waves before it',
    }),
    ...(git && { gateRecheckMs: git.pollMs }),
    ...(s.planFile !== undefined && { planFile: s.planFile }),
    fleet: { device: s.device, labels: s.labels },
    ...(s.identity && { enrollmentKeys: s.identity.enrollmentKeys.map((k) => k.key) }),
    // Secrets are opened with the device's own age identity (SPEC §15–16); the values stay in the vault, in memory.
    ...(s.identity && {
      secrets: {
        opener: new SecretOpener({
          ageIdentity: s.identity.keys.ageIdentity,
          digestKey: digestKeyOf(s.identity.keys.ageIdentity),
        }),
        vault,
      },
    }),
    stateDir,
    trust: s.trust,
    log: logger,
    runtimes: { process: processRuntime, container: containerRuntime },
    check: (state) =>
      checkDevice(state, {
        policy,
        host: policyHost,
        containers: containerRuntime,
        processes: processRuntime,
        paths: (name) => componentPaths(stateDir, name),
        // Components that read secrets and share their run user: said at each revision taken, refused never.
        warn: (w) => log.warn({ component: w.component, code: w.code, user: w.user, others: w.others }, w.message),
      }),
    probe: cachedProbe(runtimeOf),
    concurrency: s.concurrency,
    graceMs: s.graceMs,
    restartLimits: s.restartLimits,
    ownerTag: tag,
    following: git ? 'git' : 'directory',
    useReader: (r) => (artifactReader = r),
    ...(s.window && { window: s.window }),
    // SPEC §19: a revision's artifacts (and, held for its window, its images) come before anything of it stops.
    prefetch: (components, o) =>
      prefetch(components, o, {
        fetchArtifacts: fetchArtifactsOf(stateDir, () => artifactReader),
        pullImage: (c) => containerRuntime.prefetchImage(c),
        freeBytes: async () => {
          const f = await statfs(stateDir);
          return f.bavail * f.bsize;
        },
        where: stateDir,
        log,
      }),
    logMaxBytes: s.logMaxBytes,
    logKeep: s.logKeep,
  }));
  // The store opened: a copy of it taken before an earlier switch is kept only while a new version is on probation.
  updater.discardSnapshot();
  // Adopted, the orphans swept: the secret files of instances that ended while no agent ran go now (SPEC §16).
  await Promise.all([processRuntime.sweepSecretFiles(), containerRuntime.sweepSecretFiles()]).catch((e: Error) =>
    log.warn({ err: e }, 'cannot sweep the secret files of ended components'),
  );
  // The source offers revisions (and POST /v1/sync asks it to look now); it never offers the same content twice.
  let source: { start(): Promise<void>; stopLooking(): Promise<void>; close(): Promise<void> };
  try {
    if (git && gitModules) {
      const { kind: _kind, ...gitOpts } = git;
      const following = gitModules.followGit(agent, {
        ...gitOpts,
        stateDir,
        ...(s.planFile !== undefined && { planFile: s.planFile }),
        device: s.device,
        labels: s.labels,
        log: logger,
        random: Math.random,
        now: Date.now,
        ...identityReporting(s),
      });
      source = {
        start: () => following.start(),
        stopLooking: () => following.stopLooking(),
        close: () => following.close(),
      };
    } else if (s.source.kind === 'dir') {
      // chokidar only in directory mode.
      const { DirectorySource } = await import('../source/directory-source.js');
      const dir = new DirectorySource(s.source.root, {
        settleMs: s.source.settleMs,
        onRevision: (r: Revision) => agent.offer(r),
        onError: (e) => log.error({ err: e }, 'watching the directory failed'),
      });
      agent.onSync(() => dir.syncNow());
      source = { start: () => dir.start(), stopLooking: () => dir.close(), close: async () => undefined };
    } else throw new Error('runAgent: no source');
  } catch (e) {
    await agent.close();
    throw e;
  }
  warnRootProcesses(agent, policy.allowRoot, log);
  return {
    agent,
    agentUpdate: () => updater.view(),
    start: () => source.start(),
    async close(opts) {
      // Nothing new is taken up; the apply in flight ends (its outcome written and handed to the outbox), then the
      // reporting ends: closed first, it would leave that outcome's report unsent for good (a restart resumes).
      await source.stopLooking();
      await agent.close({ stopComponents: opts.stopComponents });
      await source.close();
      // Containers keep running; the runtime only stops following their exits and logs (it saves where it got to).
      await containerRuntime.close();
    },
  };
}
