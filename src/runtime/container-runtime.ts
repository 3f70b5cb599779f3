// The container runtime (SPEC §5): components as containers of a Docker or Podman engine, owned by label, confined.
import { existsSync } from 'node:fs';
import type Docker from 'dockerode';
import type { DevicePolicy } from '../core/device-policy.js';
import type { DesiredComponent } from '../core/desired-state.js';
import type { PolicyHost } from '../core/policy-check.js';
import type { Logger } from '../log/logger.js';
import type { InstallArtifactsFn } from './artifact-installer.js';
import { checkContainerComponent, type ContainerIssue } from './container-check.js';
import { connectEngine, type Engine, type EngineChoice, type EngineKind, type SocketPaths } from './container-engine.js';
import { ContainerError, engineMessage, engineStatus } from './container-error.js';
import { ensureImage, type PullProgress } from './container-image.js';
import { answeringEndpoints, engineUnavailable, listLabelled } from './engine-http.js';
import { pumpContainerLogs, type LogPump } from './container-log-pump.js';
import { containerName, createOptions, LABELS } from './container-spec.js';
import { probe } from './probe.js';
import type { BoundProbe } from './process-runtime.js';
import { DEFAULT_PATH } from './resolve-command.js';
import type { ComponentPaths, ExitStatus, Instance, InstanceRef, Runtime } from './runtime.js';
import { hostPolicyFacts } from './policy-host.js';
import { buildPrivileges, currentAgentIdentity, type AgentIdentity, type Privileges } from './privileges.js';
import { readUserDb, type UserDb } from '../state-dir/user-db.js';
import { prepareWorkDir } from './work-dir.js';
import type { SecretValues } from '../secrets/secret-vault.js';
import { ComponentSecrets } from './component-secrets.js';
import { secretMounts } from './secret-mounts.js';
import { updateLockMount } from './update-lock-mount.js';
import type { SecretsDir } from './secrets-root.js';
import { withoutSecretEnv } from './secret-env.js';

export interface ContainerRuntimeOptions {
  /** The agent's identity (as ProcessRuntime's ownerTag): the `io.keystone.owner` label of every container it creates. */
  ownerTag: string;
  /** What this device allows (SPEC §5 device policy); default: nothing beyond the safe defaults. */
  policy?: DevicePolicy;
  /** The host facts the policy is checked against; default: this machine's (hostPolicyFacts). */
  policyHost?: PolicyHost;
  /** Puts a component's artifacts into its work directory (as for processes); without it, artifacts are refused. */
  installArtifacts?: InstallArtifactsFn;
  /** Pull progress, failures of log copying, foreign containers left alone. */
  log?: Pick<Logger, 'info' | 'warn'>;
  /** Pull progress events, e.g. for a terminal's progress line. */
  onPullProgress?: (component: string, p: PullProgress) => void;
  now?: () => number;
  /** For the random part of container names. */
  random?: () => number;
  /** Where to look for engines instead of the defaults (tests). */
  socketPaths?: SocketPaths;
  /** DOCKER_HOST and XDG_RUNTIME_DIR come from here; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Who the agent is (default: this process), the user database and setpriv, for host-side `cmd:` checks. */
  agent?: AgentIdentity;
  userDb?: () => Promise<UserDb>;
  setprivPath?: string;
  /** Does a host path exist (mount sources)? Default existsSync. */
  exists?: (path: string) => boolean;
  /** How long an exit (or a stop) waits for the container's last output to reach the log files. Default 2000 ms. */
  logDrainMs?: number;
  /** How often an exit is polled when the engine's wait fails (an engine restart). Default 1000 ms. */
  exitPollMs?: number;
  /** Secret values by digest (SPEC §16): into the container's Env and read-only files, only where it is created. */
  secrets?: SecretValues;
  /** Where the files mounted into containers are written (secrets-root.ts; a plain path is taken as it is). */
  secretsRoot?: string | SecretsDir;
}

/** A container carrying this agent's owner label, as the engine lists it. */
export interface OwnedContainer {
  id: string;
  name: string;
  component: string;
  hash: string;
  /** The engine's state: `created`, `running`, `exited`, … */
  state: string;
  engine: EngineKind;
}

interface Watch {
  exited: Promise<ExitStatus>;
  pump: LogPump;
  abort: AbortController;
}

const PULL_LOG_EVERY_MS = 1000;

/** Runs components as containers: install (pull), start, stop (then remove), adopt by id and owner label. */
export class ContainerRuntime implements Runtime {
  readonly kind = 'container' as const;
  private readonly engines = new Map<EngineChoice, Promise<Engine>>();
  /** Which engine holds a container this runtime created or adopted. */
  private readonly located = new Map<string, Engine>();
  private readonly watches = new Map<string, Watch>();
  private readonly now: () => number;
  private policyHost: PolicyHost | undefined;
  private readonly secrets: ComponentSecrets;

  constructor(private readonly opts: ContainerRuntimeOptions) {
    this.now = opts.now ?? Date.now;
    // A container the engine cannot be asked about counts as there: its files stay until it is known to be gone.
    const alive = (r: InstanceRef) => r.kind === 'container' && this.locate(r.id).then((f) => f !== undefined, () => true);
    this.secrets = new ComponentSecrets({ kind: 'container', values: opts.secrets, root: opts.secretsRoot, alive });
  }

  /** The engine a recipe's `runtime` names, found once and remembered; a failed discovery is retried next time. */
  engine(choice: EngineChoice = 'auto'): Promise<Engine> {
    let p = this.engines.get(choice);
    if (!p) {
      p = connectEngine(choice, { env: this.opts.env, socketPaths: this.opts.socketPaths });
      this.engines.set(choice, p);
      // Said once per recipe `runtime`: which engine, on which socket (auto takes Docker's when both answer).
      p.then(
        (e) => this.opts.log?.info({ runtime: choice, engine: e.kind, socket: e.endpoint.label }, 'container engine'),
        () => this.engines.delete(choice),
      );
    }
    return p;
  }

  /** Every reason `c` cannot run here (see checkContainerComponent), with this runtime's permissions. */
  check(c: DesiredComponent): ContainerIssue[] {
    return checkContainerComponent(c, {
      ...(this.opts.policy && { policy: this.opts.policy }),
      host: this.host(),
      exists: this.opts.exists ?? existsSync,
    });
  }

  /**
   * The work and log directories, the recipe's artifacts into the work directory, then the image per pull_policy.
   * Refuses (before any of it) what check() refuses. Throws ContainerError (KS_CONTAINER_NOT_PERMITTED,
   * KS_MOUNT_SOURCE_*, KS_CONTAINER_ENGINE_UNAVAILABLE, KS_IMAGE_MISSING, KS_IMAGE_PULL_FAILED, KS_INSTALL_ABORTED)
   * or ArtifactError.
   */
  async install(c: DesiredComponent, paths: ComponentPaths, signal: AbortSignal): Promise<void> {
    const spec = this.assertAllowed(c);
    await this.prepareWorkDir(paths);
    if (c.recipe.artifacts.length) {
      if (!this.opts.installArtifacts) throw new ContainerError('KS_START_FAILED', `${c.name} has artifacts, but this container runtime was given no artifact installer`, { component: c.name });
      await this.opts.installArtifacts(c, paths.workDir);
    }
    if (signal.aborted) throw new ContainerError('KS_INSTALL_ABORTED', `install of ${c.name} was aborted`, { component: c.name });
    const engine = await this.engine(spec.runtime);
    await this.ensureImage(engine, c, spec.pull_policy, signal);
  }

  /**
   * The image ahead of time (SPEC §19: a revision held for its maintenance window is downloaded at once): pulled as
   * install would (`always` and `if-not-present` when missing), `never` left as it is. Nothing else is touched.
   */
  async prefetchImage(c: DesiredComponent, signal?: AbortSignal): Promise<void> {
    const spec = this.assertAllowed(c);
    const policy = spec.pull_policy === 'always' ? 'if-not-present' : spec.pull_policy;
    await this.ensureImage(await this.engine(spec.runtime), c, policy, signal);
  }

  /**
   * Creates and starts the component's container, labelled as ours, and follows its exit and output. The image must
   * be there (install pulled it; a pullable image that has gone since is pulled again). Throws ContainerError:
   * what check() refuses, KS_CONTAINER_ENGINE_UNAVAILABLE, KS_IMAGE_MISSING, KS_START_FAILED.
   */
  async start(c: DesiredComponent, paths: ComponentPaths): Promise<Instance> {
    const spec = this.assertAllowed(c);
    const engine = await this.engine(spec.runtime);
    await this.prepareWorkDir(paths);
    const name = containerName(c, this.opts.random ?? Math.random);
    // Each mount source with its links resolved, as the check just saw it: the engine is handed a path with no link
    // left to swap (and the check refuses a source whose directories someone else could change).
    const host = this.host();
    const mountSources = spec.mounts.map((m) => host.realpath(m.source) ?? m.source);
    // Secret values only here, in the create request; their files are written for this container alone.
    const env = this.secrets.env(c, spec.env);
    const placed = await this.secrets.place(c, { kind: 'container' });
    const lockMount = updateLockMount(c, paths.workDir);
    const request = createOptions(c, { name, ownerTag: this.opts.ownerTag, logDir: paths.logDir, mountSources, env, secretMounts: secretMounts(placed), engine: engine.kind, ...(lockMount && { lockMount }) });
    const container = await this.createStarted(engine, c, request).catch(async (e: unknown) => {
      await placed?.discard();
      throw e;
    });
    await placed?.bind({ kind: 'container', id: container.id });
    this.located.set(container.id, engine);
    return { ref: { kind: 'container', id: container.id }, exited: this.watch(engine, container.id, paths.logDir) };
  }

  /** The container created and started; one that cannot start is removed again. */
  private async createStarted(engine: Engine, c: DesiredComponent, request: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    const policy = c.recipe.lifecycle.run.container!.pull_policy;
    let container: Docker.Container;
    try {
      container = await engine.docker.createContainer(request);
    } catch (e) {
      if (engineStatus(e) !== 404 || policy === 'never') throw this.createError(c, e);
      // No such image: pulled at install, removed since (a prune). The policy allows pulling it again.
      await this.ensureImage(engine, c, policy);
      container = await engine.docker.createContainer(request).catch((e2: unknown) => Promise.reject(this.createError(c, e2)));
    }
    try {
      await container.start();
    } catch (e) {
      await container.remove({ force: true, v: true }).catch(() => {});
      throw new ContainerError('KS_START_FAILED', `cannot start container of ${c.name}: ${this.secrets.scrub(c, engineMessage(e))}`, { component: c.name, containerId: container.id });
    }
    return container;
  }

  /**
   * The engine's stop (SIGTERM, SIGKILL after `graceMs`, rounded up to whole seconds as the engine counts them),
   * the last output copied, then the container removed; resolves once it is gone. A container that is gone, or
   * that does not carry our owner label, is left alone (as a pid that now belongs to another process is).
   */
  async stop(ref: InstanceRef, graceMs: number): Promise<void> {
    if (ref.kind !== 'container') throw new ContainerError('KS_WRONG_RUNTIME', `the container runtime cannot stop a ${ref.kind}`);
    const found = await this.locate(ref.id);
    if (!found) return this.secrets.release(ref);
    if (!this.owns(found.info)) {
      this.opts.log?.warn({ container: ref.id, owner: found.info.Config.Labels?.[LABELS.owner] ?? null }, 'not stopping a container this agent does not own');
      return;
    }
    const container = found.engine.docker.getContainer(ref.id);
    try {
      await container.stop({ t: Math.max(0, Math.ceil(graceMs / 1000)) });
    } catch (e) {
      const status = engineStatus(e);
      if (status === 404) return this.forgetRemoved(ref.id);
      if (status !== 304) throw new ContainerError('KS_STOP_FAILED', `cannot stop container ${short(ref.id)}: ${engineMessage(e)}`, { containerId: ref.id }, { cause: e });
    }
    await this.drain(ref.id);
    await this.remove(found.engine, ref.id);
  }

  /** Removes secret files no existing container accounts for (component-secrets.ts): for the agent, after adoption. */
  sweepSecretFiles(): Promise<void> {
    return this.secrets.sweep();
  }

  /** A container gone from the engine: nothing more to follow, and its secret files go. */
  private async forgetRemoved(id: string): Promise<void> {
    this.forget(id);
    await this.secrets.release({ kind: 'container', id });
  }

  /** Re-attaches to a running container of ours after an agent restart: exit watching and log copying resume. */
  async adopt(ref: InstanceRef): Promise<Instance | undefined> {
    if (ref.kind !== 'container') return undefined;
    const existing = this.watches.get(ref.id);
    if (existing) return { ref, exited: existing.exited };
    const found = await this.locate(ref.id);
    if (!found || !this.owns(found.info) || !found.info.State.Running) return undefined;
    const logDir = found.info.Config.Labels?.[LABELS.logDir];
    return { ref: { kind: 'container', id: found.info.Id }, exited: this.watch(found.engine, found.info.Id, logDir) };
  }

  /**
   * Every container (running or not) with this agent's owner label, on every engine that answers. Asked over plain
   * HTTP (engine-http.ts): the agent's start lists its containers on every device with an engine, and most have none
   * of ours, so dockerode is not loaded for it.
   */
  async listOwned(): Promise<OwnedContainer[]> {
    const endpoints = await answeringEndpoints({ env: this.opts.env, socketPaths: this.opts.socketPaths });
    // None answered: said as the client's discovery says it (why for each socket), without loading the client.
    if (endpoints.length === 0) throw await engineUnavailable({ env: this.opts.env, socketPaths: this.opts.socketPaths });
    const lists = [];
    for (const ep of endpoints) lists.push(...(await listLabelled(ep, `${LABELS.owner}=${this.opts.ownerTag}`)));
    return lists.map((c) => this.ownedOf(c, c.engine));
  }

  private ownedOf(c: { Id: string; Names: string[]; Labels: Record<string, string>; State: string }, engine: EngineKind): OwnedContainer {
    return {
      id: c.Id,
      name: (c.Names[0] ?? '').replace(/^\//, ''),
      component: c.Labels[LABELS.component] ?? '',
      hash: c.Labels[LABELS.hash] ?? '',
      state: c.State,
      engine,
    };
  }

  /** Removes (killing if it runs) a container of ours; one that is gone is fine; another's is KS_CONTAINER_NOT_OWNED. */
  async removeOwned(id: string): Promise<void> {
    const found = await this.locate(id);
    if (!found) return this.secrets.release({ kind: 'container', id });
    if (!this.owns(found.info))
      throw new ContainerError('KS_CONTAINER_NOT_OWNED', `container ${short(id)} does not carry this agent's owner label; it is left alone`, { containerId: id });
    await this.remove(found.engine, found.info.Id);
  }

  /**
   * The component's health check as a probe, run from the host as for processes: http(s):// and tcp:// against
   * published ports or the host network, cmd: by sh in the work directory as the device's default user, with the
   * container's env over a minimal base — but for the variables that read a secret, which it does not get. Undefined
   * when the recipe has none.
   */
  async healthProbe(c: DesiredComponent, paths: ComponentPaths): Promise<BoundProbe | undefined> {
    const health = c.recipe.lifecycle.run.health;
    if (!health) return undefined;
    // A `cmd:` check runs on the host: as the device's unprivileged default user, never as the agent's root (a
    // container recipe's check would otherwise be root code on the host). That user is shared (other components, and
    // other checks, run as it and could read the check's /proc/PID/environ): no secret value goes into its
    // environment, the variables that read one are left out.
    const priv = await this.probePrivileges();
    const base = withoutSecretEnv({ PATH: DEFAULT_PATH, HOME: priv?.identity.home ?? process.env.HOME ?? '/', LANG: process.env.LANG ?? 'C.UTF-8', ...(c.recipe.lifecycle.run.container?.env ?? {}) });
    const privilegesArgv = priv ? [this.opts.setprivPath ?? '/usr/bin/setpriv', ...priv.setprivArgs, '--'] : undefined;
    return (signal) => this.secrets.probe(c, base, (env) => probe(health.check, { timeoutMs: health.timeout, cwd: paths.workDir, env, signal, ...(privilegesArgv && { privilegesArgv }) }));
  }

  private host(): PolicyHost {
    return (this.policyHost ??= this.opts.policyHost ?? hostPolicyFacts({ env: this.opts.env ?? process.env }));
  }

  /**
   * Who a container's host-side `cmd:` check runs as: the device's default unprivileged user, no capabilities,
   * no_new_privs (undefined when the agent is not root: it runs as the agent's own user then). Throws KS_USER_UNKNOWN
   * when the device has no such user.
   */
  private async probePrivileges(): Promise<Privileges | undefined> {
    const agent = this.opts.agent ?? currentAgentIdentity();
    if (agent.uid !== 0) return undefined;
    return buildPrivileges(undefined, agent, await (this.opts.userDb ?? (() => readUserDb()))());
  }

  /** The work directory: the agent's, with the probe user's group so that a `cmd:` check can work in it (0750). */
  private async prepareWorkDir(paths: ComponentPaths): Promise<void> {
    const priv = await this.probePrivileges();
    const agent = this.opts.agent ?? currentAgentIdentity();
    await prepareWorkDir(paths.workDir, priv ? { uid: agent.uid, gid: priv.identity.gid } : undefined);
  }

  /**
   * Stops watching exits and copying output, leaving every container running: the agent's own exit. Resolves once
   * each copy has saved its cursor, so that the next agent resumes after the last line copied.
   */
  async close(): Promise<void> {
    const pumps = [...this.watches.values()].map((w) => {
      w.abort.abort();
      w.pump.stop();
      return w.pump.done;
    });
    this.watches.clear();
    await Promise.all(pumps);
  }

  private assertAllowed(c: DesiredComponent): NonNullable<DesiredComponent['recipe']['lifecycle']['run']['container']> {
    const issues = this.check(c);
    const first = issues[0];
    if (first) {
      const message = issues.length === 1 ? first.message : `${issues.length} problems: ${issues.map((i) => i.message).join('; ')}`;
      throw new ContainerError(first.code, message, { component: c.name, path: first.path });
    }
    return c.recipe.lifecycle.run.container!;
  }

  private async ensureImage(engine: Engine, c: DesiredComponent, policy: 'always' | 'if-not-present' | 'never', signal?: AbortSignal): Promise<void> {
    const image = c.recipe.lifecycle.run.container!.image;
    let lastLog = -Infinity;
    let lastStatus = '';
    const pulled = await ensureImage(engine.docker, image, policy, {
      component: c.name,
      signal,
      onProgress: (p) => {
        this.opts.onPullProgress?.(c.name, p);
        // The log gets one line a second while bytes flow, and every other status change (per image, not per layer).
        const t = this.now();
        const downloading = p.status === 'Downloading' || p.status === 'Extracting';
        if (downloading ? t - lastLog < PULL_LOG_EVERY_MS : p.status === lastStatus) return;
        lastLog = t;
        lastStatus = p.status;
        this.opts.log?.info(
          { component: c.name, image, status: p.status, ...(p.totalBytes > 0 && { mb: `${mb(p.currentBytes)}/${mb(p.totalBytes)}` }) },
          'pulling image',
        );
      },
    });
    if (pulled) this.opts.log?.info({ component: c.name, image, policy }, 'image pulled');
  }

  private createError(c: DesiredComponent, e: unknown): ContainerError {
    const image = c.recipe.lifecycle.run.container!.image;
    if (engineStatus(e) === 404)
      return new ContainerError('KS_IMAGE_MISSING', `image ${image} of ${c.name} is not on this device: ${engineMessage(e)}`, { component: c.name, image }, { cause: e });
    // The engine's refusal of a create request may quote it (an env entry): said without the values, no cause kept.
    return new ContainerError('KS_START_FAILED', `cannot create container of ${c.name}: ${this.secrets.scrub(c, engineMessage(e))}`, { component: c.name, image });
  }

  /** Exit from the engine's wait (its status code), after the container's last output has reached the log files. */
  private watch(engine: Engine, id: string, logDir: string | undefined): Promise<ExitStatus> {
    const abort = new AbortController();
    const container = engine.docker.getContainer(id);
    const pump: LogPump = logDir
      ? pumpContainerLogs(container, logDir, { now: this.now, onError: (e) => this.opts.log?.warn({ container: short(id), err: e.message }, 'copying container output failed') })
      : { done: Promise.resolve(), stop: () => {} };
    const exited = (async (): Promise<ExitStatus> => {
      let code: number | null;
      try {
        code = ((await container.wait({ abortSignal: abort.signal })) as { StatusCode: number }).StatusCode;
      } catch (e) {
        if (abort.signal.aborted) return new Promise<ExitStatus>(() => {}); // the agent is leaving: no exit to report
        code = engineStatus(e) === 404 ? null : await this.pollExit(container, abort.signal);
      }
      await this.drain(id);
      this.watches.delete(id);
      return { code, signal: null };
    })();
    this.watches.set(id, { exited, pump, abort });
    return exited;
  }

  /** When the engine's wait fails (its connection dropped): inspect until the container is no longer running. */
  private async pollExit(container: Docker.Container, signal: AbortSignal): Promise<number | null> {
    for (;;) {
      await new Promise((r) => setTimeout(r, this.opts.exitPollMs ?? 1000).unref());
      if (signal.aborted) return new Promise<number | null>(() => {});
      try {
        const s = (await container.inspect()).State;
        if (!s.Running) return s.ExitCode;
      } catch (e) {
        if (engineStatus(e) === 404) return null;
      }
    }
  }

  /** Waits (boundedly) for a container's output to be copied. */
  private async drain(id: string): Promise<void> {
    const w = this.watches.get(id);
    if (!w) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([w.pump.done, new Promise<void>((r) => (timer = setTimeout(r, this.opts.logDrainMs ?? 2000)))]);
    clearTimeout(timer);
    w.pump.stop();
  }

  private async remove(engine: Engine, id: string): Promise<void> {
    try {
      await engine.docker.getContainer(id).remove({ force: true, v: true });
    } catch (e) {
      const status = engineStatus(e);
      // 404: gone already; 409: a removal is already in progress (the engine finishes it).
      if (status !== 404 && status !== 409) throw new ContainerError('KS_STOP_FAILED', `cannot remove container ${short(id)}: ${engineMessage(e)}`, { containerId: id }, { cause: e });
    }
    await this.forgetRemoved(id);
  }

  private forget(id: string): void {
    const w = this.watches.get(id);
    w?.pump.stop();
    this.located.delete(id);
  }

  private owns(info: Docker.ContainerInspectInfo): boolean {
    return info.Config.Labels?.[LABELS.owner] === this.opts.ownerTag;
  }

  /** The container and its engine: the one that created or adopted it, else every engine that answers. */
  private async locate(id: string): Promise<{ engine: Engine; info: Docker.ContainerInspectInfo } | undefined> {
    const known = this.located.get(id);
    const candidates = known ? [known] : await this.reachableEngines();
    for (const engine of candidates) {
      try {
        return { engine, info: await engine.docker.getContainer(id).inspect() };
      } catch (e) {
        if (engineStatus(e) !== 404) throw new ContainerError('KS_CONTAINER_ENGINE_UNAVAILABLE', `cannot inspect container ${short(id)}: ${engineMessage(e)}`, { containerId: id }, { cause: e });
      }
    }
    return undefined;
  }

  /** Docker's and Podman's engines, those that answer, each once (a Podman socket may serve both names). */
  private async reachableEngines(): Promise<Engine[]> {
    const out: Engine[] = [];
    for (const choice of ['docker', 'podman'] as const) {
      try {
        const e = await this.engine(choice);
        if (!out.some((o) => o.endpoint.label === e.endpoint.label)) out.push(e);
      } catch {
        // not on this device
      }
    }
    if (out.length === 0) await this.engine('auto'); // throws, naming every socket tried
    return out;
  }
}

const short = (id: string) => id.slice(0, 12);
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
