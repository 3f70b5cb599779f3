// The process runtime (SPEC §5): components as detached process groups, dropped to the recipe's user with setpriv.
import type { DesiredComponent } from '../core/desired-state.js';
import type { ComponentPaths, ExitStatus, Instance, InstanceRef, PreparedStart, Runtime } from './runtime.js';
import {
  buildPrivileges,
  currentAgentIdentity,
  type AgentIdentity,
  type Privileges,
  type RunIdentity,
} from './privileges.js';
import { isAlive, isSameProcess } from './proc-identity.js';
import { AdoptedExits } from './adopted-exits.js';
import { probe, type ProbeResult } from './probe.js';
import { killGroup, stopGroup, systemClock, type PollClock } from './process-group.js';
import type { ProcessRuntimeOptions } from './process-runtime-options.js';
import { prepareSpawn } from './prepare-spawn.js';
import { spawnPrepared, type PreparedSpawn, type SpawnWith } from './process-spawn.js';
import { DEFAULT_PATH } from './resolve-command.js';
import { aborted, runInstallScript } from './run-install-script.js';
import { RuntimeError } from './runtime-error.js';
import { findUser, readUserDb } from '../state-dir/user-db.js';
import { prepareWorkDir } from './work-dir.js';
import { installArtifactsAs } from './install-artifacts-as.js';
import { blockingAncestor } from './work-dir-reach.js';
import { ComponentSecrets } from './component-secrets.js';
import type { RunUser } from '../core/shared-run-users.js';

/** The environment variables that mark a process as a component of one agent (see ProcessRuntimeOptions.ownerTag). */
export const OWNER_ENV = 'KEYSTONE_OWNER';
export const COMPONENT_ENV = 'KEYSTONE_COMPONENT';

/** A health probe bound to one component: its check, timeout, work directory, user and environment. */
export type BoundProbe = (signal: AbortSignal) => Promise<ProbeResult>;

/** Runs components as process groups: install, start, stop (whole group), adopt after an agent restart. */
export class ProcessRuntime implements Runtime {
  readonly kind = 'process' as const;
  /** Set when the agent is not root, for the caller to log once: recipe users and capabilities are not applied. */
  readonly privilegeNote: string | undefined;
  private readonly setprivPath: string;
  private readonly agent: AgentIdentity;
  private readonly clock: PollClock;
  private readonly secrets: ComponentSecrets;
  private readonly adoptedExits: AdoptedExits;
  /** What a spawn needs of this runtime (process-spawn.ts). */
  private readonly spawning: SpawnWith;

  constructor(private readonly opts: ProcessRuntimeOptions) {
    const alive = (r: InstanceRef) => r.kind === 'process' && isSameProcess(r.pid, r.startTime) && isAlive(r.pid);
    this.secrets = new ComponentSecrets({ kind: 'process', values: opts.secrets, root: opts.secretsRoot, alive });
    this.adoptedExits = new AdoptedExits(opts.adoptPollMs ?? 1000);
    this.setprivPath = opts.setprivPath ?? '/usr/bin/setpriv';
    this.agent = opts.agent ?? currentAgentIdentity();
    this.clock = opts.clock ?? systemClock;
    this.spawning = {
      setprivPath: this.setprivPath,
      secrets: this.secrets,
      releaseSecretsOnExit: (ref, exited) => this.releaseSecretsOnExit(ref, exited),
    };
    this.privilegeNote =
      this.agent.uid === 0
        ? undefined
        : `the agent is not root: components run as ${this.agent.name ?? `uid ${this.agent.uid}`} (uid ${this.agent.uid}); recipe users and capabilities are not applied, no_new_privileges is`;
  }

  /** The recipe's security table resolved on this device (throws KS_USER_UNKNOWN). */
  async privilegesFor(c: DesiredComponent): Promise<Privileges> {
    const db = await (this.opts.userDb ?? (() => readUserDb()))();
    const agent =
      this.agent.name === undefined
        ? { ...this.agent, name: db.passwd.find((u) => u.uid === this.agent.uid)?.name }
        : this.agent;
    const p = buildPrivileges(c.recipe.lifecycle.run.security, agent, db, { allowRoot: this.opts.allowRoot ?? false });
    // A passwd entry's home wins over the process environment for the agent's own user too.
    if (!p.switchesUser && agent.name !== undefined) {
      const home = findUser(db, agent.name)?.home;
      if (home) p.identity.home = home;
    }
    return p;
  }

  /** The agent's own user: components that run as it share it with the agent (shared-run-users.ts). */
  get agentUser(): RunUser {
    return { uid: this.agent.uid, ...(this.agent.name !== undefined && { name: this.agent.name }) };
  }

  /** Who `c` runs as on this device (undefined when its user is unknown here: that fails it at install, with its own code). */
  async runUserOf(c: DesiredComponent): Promise<RunUser | undefined> {
    try {
      const { identity } = await this.privilegesFor(c);
      return { uid: identity.uid, ...(identity.name !== undefined && { name: identity.name }) };
    } catch {
      return undefined;
    }
  }

  /**
   * Why the run user of `c` could not reach its work directory (KS_WORK_DIR_UNREACHABLE), for the agent to refuse the
   * revision at once instead of crash-looping on a program it cannot find; undefined when it can, or when the user is
   * unknown (that fails the component at install, with its own code).
   */
  async unreachableWorkDir(c: DesiredComponent, paths: ComponentPaths): Promise<string | undefined> {
    let priv: Privileges;
    try {
      priv = await this.privilegesFor(c);
    } catch {
      return undefined;
    }
    if (!priv.switchesUser) return undefined;
    const blocked = await blockingAncestor(paths.workDir, priv.identity);
    if (!blocked) return undefined;
    const who = priv.identity.name ?? `uid ${priv.identity.uid}`;
    return `${c.name} runs as ${who}, who cannot reach its work directory ${paths.workDir}: ${blocked.dir} (mode ${blocked.mode.toString(8).padStart(4, '0')}) does not let it through; use a state directory every run user can traverse (--state-dir /var/lib/keystone; for the example: KEYSTONE_STATE_DIR=/var/tmp/keystone-example npm start), or chmod o+x ${blocked.dir}`;
  }

  /** The component's environment: a minimal base (PATH, HOME of the run user, LANG), then the recipe's env. */
  environmentFor(c: DesiredComponent, identity: RunIdentity): Record<string, string> {
    return {
      PATH: DEFAULT_PATH,
      HOME: identity.home,
      LANG: this.opts.lang ?? process.env.LANG ?? 'C.UTF-8',
      ...(c.recipe.lifecycle.run.exec?.env ?? {}),
      ...(this.opts.ownerTag !== undefined && { [OWNER_ENV]: this.opts.ownerTag, [COMPONENT_ENV]: c.name }),
    };
  }

  /** `[setpriv, …options, '--']`: what every component command (run, install, cmd: probe) is prefixed with. */
  privilegesArgv(p: Privileges): string[] {
    return [this.setprivPath, ...p.setprivArgs, '--'];
  }

  /**
   * Artifacts into the work directory (created, owned by the run user), then the install script by `sh -c` in
   * it as the run user, output appended to the component's logs, the whole group killed at the recipe's timeout
   * (run-install-script.ts).
   * Throws ArtifactError from the artifacts, or KS_INSTALL_FAILED / KS_INSTALL_TIMEOUT / KS_INSTALL_ABORTED / KS_USER_UNKNOWN.
   */
  async install(c: DesiredComponent, paths: ComponentPaths, signal: AbortSignal): Promise<void> {
    this.assertProcess(c);
    const priv = await this.privilegesFor(c);
    const owner = priv.switchesUser ? { uid: priv.identity.uid, gid: priv.identity.gid } : undefined;
    await prepareWorkDir(paths.workDir, owner);
    if (signal.aborted) throw aborted(c);
    if (c.recipe.artifacts.length) await installArtifactsAs(this.opts.installArtifacts, c, paths.workDir, owner);
    const script = c.recipe.lifecycle.install;
    if (!script) return;
    if (signal.aborted) throw aborted(c);
    const env = this.secrets.env(c, this.environmentFor(c, priv.identity));
    await runInstallScript(c, script, {
      privilegesArgv: this.privilegesArgv(priv),
      workDir: paths.workDir,
      logDir: paths.logDir,
      env,
      signal,
      clock: this.clock,
      scrub: (text) => this.secrets.scrub(c, text),
    });
  }

  /**
   * Spawns `setpriv … -- command args` detached (its own session and process group) in the work directory,
   * stdout/stderr appended to the log files by the child itself. Throws KS_START_FAILED (or KS_USER_UNKNOWN).
   */
  async start(c: DesiredComponent, paths: ComponentPaths): Promise<Instance> {
    const p = await this.prepareSpawn(c, paths);
    return (await spawnPrepared(c, p, false, this.spawning)).instance;
  }

  /**
   * A start done ahead, for a restart's delay to hide it: everything `start` does (user database, work directory,
   * command, log files, and the fork of `setpriv … -- /bin/sh`, which drops the privileges) but the exec of the
   * component's program, which waits on a pipe until `go()`; then only that exec stands between the delay's end and
   * the new process. The pid and start time are the prepared process's (exec keeps both). `discard()` kills it
   * unopened. The waiting shell exits without running anything when the agent dies (the pipe closes), and carries
   * the owner mark meanwhile (the orphan sweep finds it). Throws as `start` does.
   */
  async prepareStart(c: DesiredComponent, paths: ComponentPaths): Promise<PreparedStart> {
    const p = await this.prepareSpawn(c, paths);
    const { instance, gate } = await spawnPrepared(c, p, true, this.spawning);
    let open = false;
    return {
      instance,
      go: () => {
        if (open) return instance;
        open = true;
        gate?.end('\n');
        return instance;
      },
      discard: async () => {
        if (open) return;
        open = true;
        gate?.destroy();
        if (instance.ref.kind === 'process') await killGroup(instance.ref.pid, instance.ref.startTime);
        await instance.exited;
        await this.secrets.release(instance.ref);
      },
    };
  }

  /** What a spawn needs, read and checked (prepare-spawn.ts). */
  private async prepareSpawn(c: DesiredComponent, paths: ComponentPaths): Promise<PreparedSpawn> {
    this.assertProcess(c);
    return prepareSpawn(c, paths, {
      privilegesFor: (comp) => this.privilegesFor(comp),
      environmentFor: (comp, identity) => this.environmentFor(comp, identity),
      secrets: this.secrets,
    });
  }

  /**
   * SIGTERM to the process group, SIGKILL after `graceMs`; resolves once every member is gone (grandchildren
   * included). A ref whose pid now belongs to another process is already stopped. Throws KS_STOP_FAILED.
   */
  async stop(ref: InstanceRef, graceMs: number): Promise<void> {
    if (ref.kind !== 'process')
      throw new RuntimeError('KS_WRONG_RUNTIME', `the process runtime cannot stop a ${ref.kind}`);
    const r = await stopGroup(ref.pid, ref.startTime, graceMs, { clock: this.clock, killWaitMs: this.opts.killWaitMs });
    if (!r.gone)
      throw new RuntimeError('KS_STOP_FAILED', `process group ${ref.pid} did not disappear after SIGKILL`, {
        pid: ref.pid,
      });
    await this.secrets.release(ref);
  }

  /** Removes secret files no running instance accounts for (component-secrets.ts): for the agent, after adoption. */
  sweepSecretFiles(): Promise<void> {
    return this.secrets.sweep();
  }

  /** A process that exits by itself has stopped too: its secret files go (a restart writes them again). */
  private releaseSecretsOnExit(ref: InstanceRef, exited: Promise<ExitStatus>): void {
    void exited.then(() => this.secrets.release(ref));
  }

  /** Re-attaches to a process started before an agent restart: only when pid AND start time match and it is alive. */
  async adopt(ref: InstanceRef): Promise<Instance | undefined> {
    if (ref.kind !== 'process') return undefined;
    if (!isSameProcess(ref.pid, ref.startTime) || !isAlive(ref.pid)) return undefined;
    // Not our child any more: exit is noticed by a slow check of /proc (adopted-exits.ts).
    const exited = this.adoptedExits.watch(ref.pid, ref.startTime);
    this.releaseSecretsOnExit(ref, exited);
    return { ref, exited };
  }

  /** The component's health check as a probe (undefined when the recipe has none: running is healthy). */
  async healthProbe(c: DesiredComponent, paths: ComponentPaths): Promise<BoundProbe | undefined> {
    const health = c.recipe.lifecycle.run.health;
    if (!health) return undefined;
    const priv = await this.privilegesFor(c);
    const privilegesArgv = this.privilegesArgv(priv);
    const base = this.environmentFor(c, priv.identity);
    return (signal) =>
      this.secrets.probe(c, base, (env) =>
        probe(health.check, { timeoutMs: health.timeout, cwd: paths.workDir, privilegesArgv, env, signal }),
      );
  }

  private assertProcess(c: DesiredComponent): void {
    if (c.recipe.lifecycle.run.type !== 'process')
      throw new RuntimeError('KS_WRONG_RUNTIME', `${c.name} runs a ${c.recipe.lifecycle.run.type}, not a process`, {
        component: c.name,
      });
  }
}
