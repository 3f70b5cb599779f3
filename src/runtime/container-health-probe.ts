// A container component's health check as a probe run from the host (container-runtime.ts's healthProbe), and who a
// host-side `cmd:` check runs as. Apart from the runtime class: it reads the options, not the engine.
import type { DesiredComponent } from '../core/desired-state.js';
import type { ComponentSecrets } from './component-secrets.js';
import type { ContainerRuntimeOptions } from './container-runtime-options.js';
import { probe } from './probe.js';
import type { BoundProbe } from './process-runtime.js';
import { DEFAULT_PATH } from './resolve-command.js';
import type { ComponentPaths } from './runtime.js';
import { buildPrivileges, currentAgentIdentity, type Privileges } from './privileges.js';
import { readUserDb } from '../state-dir/user-db.js';
import { withoutSecretEnv } from './secret-env.js';

/** See ContainerRuntime.healthProbe. */
export async function containerHealthProbe(
  c: DesiredComponent,
  paths: ComponentPaths,
  opts: ContainerRuntimeOptions,
  secrets: ComponentSecrets,
): Promise<BoundProbe | undefined> {
  const health = c.recipe.lifecycle.run.health;
  if (!health) return undefined;
  // A `cmd:` check runs on the host: as the device's unprivileged default user, never as the agent's root (a
  // container recipe's check would otherwise be root code on the host). That user is shared (other components, and
  // other checks, run as it and could read the check's /proc/PID/environ): no secret value goes into its
  // environment, the variables that read one are left out.
  const priv = await probePrivileges(opts);
  const base = withoutSecretEnv({
    PATH: DEFAULT_PATH,
    HOME: priv?.identity.home ?? process.env.HOME ?? '/',
    LANG: process.env.LANG ?? 'C.UTF-8',
    ...(c.recipe.lifecycle.run.container?.env ?? {}),
  });
  const privilegesArgv = priv ? [opts.setprivPath ?? '/usr/bin/setpriv', ...priv.setprivArgs, '--'] : undefined;
  return (signal) =>
    secrets.probe(c, base, (env) =>
      probe(health.check, {
        timeoutMs: health.timeout,
        cwd: paths.workDir,
        env,
        signal,
        ...(privilegesArgv && { privilegesArgv }),
      }),
    );
}

/**
 * Who a container's host-side `cmd:` check runs as: the device's default unprivileged user, no capabilities,
 * no_new_privs (undefined when the agent is not root: it runs as the agent's own user then). Throws KS_USER_UNKNOWN
 * when the device has no such user.
 */
export async function probePrivileges(opts: ContainerRuntimeOptions): Promise<Privileges | undefined> {
  const agent = opts.agent ?? currentAgentIdentity();
  if (agent.uid !== 0) return undefined;
  return buildPrivileges(undefined, agent, await (opts.userDb ?? (() => readUserDb()))());
}
