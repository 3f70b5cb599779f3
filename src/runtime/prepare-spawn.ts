// What a process component's spawn needs, read and checked (process-runtime.ts's start and prepareStart): before
// process-spawn.ts forks it. Apart from the runtime class: it is given what it needs of the runtime.
import type { DesiredComponent } from '../core/desired-state.js';
import type { ComponentSecrets } from './component-secrets.js';
import { openComponentLogs } from './log-files.js';
import type { Privileges, RunIdentity } from './privileges.js';
import type { PreparedSpawn } from './process-spawn.js';
import { resolveCommand } from './resolve-command.js';
import { RuntimeError } from './runtime-error.js';
import type { ComponentPaths } from './runtime.js';
import { prepareWorkDir } from './work-dir.js';

/** What preparing a spawn needs of the runtime: the recipe's privileges and environment, and the secrets. */
export interface PrepareWith {
  privilegesFor: (c: DesiredComponent) => Promise<Privileges>;
  environmentFor: (c: DesiredComponent, identity: RunIdentity) => Record<string, string>;
  secrets: ComponentSecrets;
}

/** What a spawn needs, read and checked: privileges, the work directory, the environment, the command, the logs. */
export async function prepareSpawn(c: DesiredComponent, paths: ComponentPaths, w: PrepareWith): Promise<PreparedSpawn> {
  const exec = c.recipe.lifecycle.run.exec;
  if (!exec)
    throw new RuntimeError('KS_START_FAILED', `${c.name} has no [lifecycle.run.exec] command`, { component: c.name });
  const priv = await w.privilegesFor(c);
  const owner = priv.switchesUser ? { uid: priv.identity.uid, gid: priv.identity.gid } : undefined;
  await prepareWorkDir(paths.workDir, owner);
  const env = w.secrets.env(c, w.environmentFor(c, priv.identity));
  const resolved = await resolveCommand(exec.command, {
    cwd: paths.workDir,
    pathVar: env.PATH,
    identity: priv.identity,
  });
  if (!resolved.ok)
    throw new RuntimeError('KS_START_FAILED', `cannot start ${c.name}: ${resolved.reason}`, {
      component: c.name,
      command: exec.command,
    });
  // A relative command (./influxd) stays relative: exec resolves it against the cwd, which needs no search
  // permission on the work directory's parents for the run user.
  const file = exec.command.includes('/') ? exec.command : resolved.path;
  const secrets = await w.secrets.place(c, { kind: 'process', workDir: paths.workDir, ...(owner && { owner }) });
  const logs = await openComponentLogs(paths.logDir).catch(async (e: unknown) => {
    await secrets?.discard();
    throw e;
  });
  return {
    priv,
    env,
    file,
    args: exec.args,
    command: exec.command,
    workDir: paths.workDir,
    logs,
    ...(secrets && { secrets }),
  };
}
