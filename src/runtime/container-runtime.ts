// The container runtime (SPEC §5): components as containers of a Docker or Podman engine, owned by label, confined.
import { existsSync } from 'node:fs';
import type Docker from 'dockerode';
import type { DesiredComponent } from '../core/desired-state.js';
import type { PolicyHost } from '../core/policy-check.js';
import { checkContainerComponent, type ContainerIssue } from './container-check.js';
import type { Engine, EngineChoice } from './container-engine.js';
import { ContainerEngines, short, type OwnedContainer } from './container-engines.js';
import { ContainerError, engineMessage, engineStatus } from './container-error.js';
import type { ContainerRuntimeOptions } from './container-runtime-options.js';
import { ContainerWatches } from './container-watches.js';
import { containerName, createOptions, LABELS } from './container-spec.js';
import { ensureImageLogged } from './ensure-image-logged.js';
import { containerHealthProbe, probePrivileges } from './container-health-probe.js';
import { createStarted } from './create-started.js';
import type { BoundProbe } from './process-runtime.js';
import type { ComponentPaths, Instance, InstanceRef, Runtime } from './runtime.js';
import { hostPolicyFacts } from './policy-host.js';
import { currentAgentIdentity } from './privileges.js';
import { prepareWorkDir } from './work-dir.js';
import { ComponentSecrets } from './component-secrets.js';
import { secretMounts } from './secret-mounts.js';
import { updateLockMount } from './update-lock-mount.js';

/** Runs components as containers: install (pull), start, stop (then remove), adopt by id and owner label. */
export class ContainerRuntime implements Runtime {
  readonly kind = 'container' as const;
  private readonly engines: ContainerEngines;
  private readonly watches: ContainerWatches;
  private readonly now: () => number;
  private policyHost: PolicyHost | undefined;
  private readonly secrets: ComponentSecrets;

  constructor(private readonly opts: ContainerRuntimeOptions) {
    this.now = opts.now ?? Date.now;
    this.engines = new ContainerEngines(opts);
    this.watches = new ContainerWatches(opts, this.now);
    // A container the engine cannot be asked about counts as there: its files stay until it is known to be gone.
    const alive = (r: InstanceRef) =>
      r.kind === 'container' &&
      this.engines.locate(r.id).then(
        (f) => f !== undefined,
        () => true,
      );
    this.secrets = new ComponentSecrets({ kind: 'container', values: opts.secrets, root: opts.secretsRoot, alive });
  }

  /** The engine a recipe's `runtime` names (container-engines.ts): found once and remembered. */
  engine(choice: EngineChoice = 'auto'): Promise<Engine> {
    return this.engines.engine(choice);
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
      if (!this.opts.installArtifacts)
        throw new ContainerError(
          'KS_START_FAILED',
          `${c.name} has artifacts, but this container runtime was given no artifact installer`,
          { component: c.name },
        );
      await this.opts.installArtifacts(c, paths.workDir);
    }
    if (signal.aborted)
      throw new ContainerError('KS_INSTALL_ABORTED', `install of ${c.name} was aborted`, { component: c.name });
    const engine = await this.engine(spec.runtime);
    await ensureImageLogged(engine, c, spec.pull_policy, this.opts, this.now, signal);
  }

  /**
   * The image ahead of time (SPEC §19: a revision held for its maintenance window is downloaded at once): pulled as
   * install would (`always` and `if-not-present` when missing), `never` left as it is. Nothing else is touched.
   */
  async prefetchImage(c: DesiredComponent, signal?: AbortSignal): Promise<void> {
    const spec = this.assertAllowed(c);
    const policy = spec.pull_policy === 'always' ? 'if-not-present' : spec.pull_policy;
    await ensureImageLogged(await this.engine(spec.runtime), c, policy, this.opts, this.now, signal);
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
    const request = createOptions(c, {
      name,
      ownerTag: this.opts.ownerTag,
      logDir: paths.logDir,
      mountSources,
      env,
      secretMounts: secretMounts(placed),
      engine: engine.kind,
      ...(lockMount && { lockMount }),
    });
    const container = await createStarted(engine, c, request, {
      pullLog: this.opts,
      now: this.now,
      scrub: (comp, text) => this.secrets.scrub(comp, text),
    }).catch(async (e: unknown) => {
      await placed?.discard();
      throw e;
    });
    await placed?.bind({ kind: 'container', id: container.id });
    this.engines.located.set(container.id, engine);
    return {
      ref: { kind: 'container', id: container.id },
      exited: this.watches.watch(engine, container.id, paths.logDir),
    };
  }

  /**
   * The engine's stop (SIGTERM, SIGKILL after `graceMs`, rounded up to whole seconds as the engine counts them),
   * the last output copied, then the container removed; resolves once it is gone. A container that is gone, or
   * that does not carry our owner label, is left alone (as a pid that now belongs to another process is).
   */
  async stop(ref: InstanceRef, graceMs: number): Promise<void> {
    if (ref.kind !== 'container')
      throw new ContainerError('KS_WRONG_RUNTIME', `the container runtime cannot stop a ${ref.kind}`);
    const found = await this.engines.locate(ref.id);
    if (!found) return this.secrets.release(ref);
    if (!this.owns(found.info)) {
      this.opts.log?.warn(
        { container: ref.id, owner: found.info.Config.Labels?.[LABELS.owner] ?? null },
        'not stopping a container this agent does not own',
      );
      return;
    }
    const container = found.engine.docker.getContainer(ref.id);
    try {
      await container.stop({ t: Math.max(0, Math.ceil(graceMs / 1000)) });
    } catch (e) {
      const status = engineStatus(e);
      if (status === 404) return this.forgetRemoved(ref.id);
      if (status !== 304)
        throw new ContainerError(
          'KS_STOP_FAILED',
          `cannot stop container ${short(ref.id)}: ${engineMessage(e)}`,
          { containerId: ref.id },
          { cause: e },
        );
    }
    await this.watches.drain(ref.id);
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
    const found = await this.engines.locate(ref.id);
    if (!found || !this.owns(found.info) || !found.info.State.Running) return undefined;
    const logDir = found.info.Config.Labels?.[LABELS.logDir];
    return {
      ref: { kind: 'container', id: found.info.Id },
      exited: this.watches.watch(found.engine, found.info.Id, logDir),
    };
  }

  /** Every container (running or not) with this agent's owner label, on every engine that answers (container-engines.ts). */
  listOwned(): Promise<OwnedContainer[]> {
    return this.engines.listOwned();
  }

  /** Removes (killing if it runs) a container of ours; one that is gone is fine; another's is KS_CONTAINER_NOT_OWNED. */
  async removeOwned(id: string): Promise<void> {
    const found = await this.engines.locate(id);
    if (!found) return this.secrets.release({ kind: 'container', id });
    if (!this.owns(found.info))
      throw new ContainerError(
        'KS_CONTAINER_NOT_OWNED',
        `container ${short(id)} does not carry this agent's owner label; it is left alone`,
        { containerId: id },
      );
    await this.remove(found.engine, found.info.Id);
  }

  /**
   * The component's health check as a probe, run from the host as for processes: http(s):// and tcp:// against
   * published ports or the host network, cmd: by sh in the work directory as the device's default user, with the
   * container's env over a minimal base — but for the variables that read a secret, which it does not get. Undefined
   * when the recipe has none (container-health-probe.ts).
   */
  healthProbe(c: DesiredComponent, paths: ComponentPaths): Promise<BoundProbe | undefined> {
    return containerHealthProbe(c, paths, this.opts, this.secrets);
  }

  private host(): PolicyHost {
    return (this.policyHost ??= this.opts.policyHost ?? hostPolicyFacts({ env: this.opts.env ?? process.env }));
  }

  /** The work directory: the agent's, with the probe user's group so that a `cmd:` check can work in it (0750). */
  private async prepareWorkDir(paths: ComponentPaths): Promise<void> {
    const priv = await probePrivileges(this.opts);
    const agent = this.opts.agent ?? currentAgentIdentity();
    await prepareWorkDir(paths.workDir, priv ? { uid: agent.uid, gid: priv.identity.gid } : undefined);
  }

  /**
   * Stops watching exits and copying output, leaving every container running: the agent's own exit. Resolves once
   * each copy has saved its cursor, so that the next agent resumes after the last line copied.
   */
  async close(): Promise<void> {
    await this.watches.close();
  }

  private assertAllowed(c: DesiredComponent): NonNullable<DesiredComponent['recipe']['lifecycle']['run']['container']> {
    const issues = this.check(c);
    const first = issues[0];
    if (first) {
      const message =
        issues.length === 1 ? first.message : `${issues.length} problems: ${issues.map((i) => i.message).join('; ')}`;
      throw new ContainerError(first.code, message, { component: c.name, path: first.path });
    }
    return c.recipe.lifecycle.run.container!;
  }

  private async remove(engine: Engine, id: string): Promise<void> {
    try {
      await engine.docker.getContainer(id).remove({ force: true, v: true });
    } catch (e) {
      const status = engineStatus(e);
      // 404: gone already; 409: a removal is already in progress (the engine finishes it).
      if (status !== 404 && status !== 409)
        throw new ContainerError(
          'KS_STOP_FAILED',
          `cannot remove container ${short(id)}: ${engineMessage(e)}`,
          { containerId: id },
          { cause: e },
        );
    }
    await this.forgetRemoved(id);
  }

  private forget(id: string): void {
    const w = this.watches.get(id);
    w?.pump.stop();
    this.engines.located.delete(id);
  }

  private owns(info: Docker.ContainerInspectInfo): boolean {
    return info.Config.Labels?.[LABELS.owner] === this.opts.ownerTag;
  }
}
