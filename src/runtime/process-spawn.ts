// The spawn of a component process, once everything it needs is prepared (prepare-spawn.ts): setpriv
// detached in its own process group, straight to the program or behind a gate that a restart opens later. Apart from
// process-runtime.ts because it is the one place a process is forked, with its own failure paths.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { DesiredComponent } from '../core/desired-state.js';
import type { ComponentSecrets } from './component-secrets.js';
import type { openComponentLogs } from './log-files.js';
import type { Privileges } from './privileges.js';
import { processStartTime } from './proc-identity.js';
import { RuntimeError } from './runtime-error.js';
import type { ExitStatus, Instance, InstanceRef } from './runtime.js';
import type { PlacedSecrets } from './secret-files.js';

/** What a spawn needs of the runtime: setpriv's path, the secrets (to scrub a message), and the release at exit. */
export interface SpawnWith {
  setprivPath: string;
  secrets: ComponentSecrets;
  releaseSecretsOnExit: (ref: InstanceRef, exited: Promise<ExitStatus>) => void;
}

export interface PreparedSpawn {
  priv: Privileges;
  env: Record<string, string>;
  file: string;
  args: string[];
  command: string;
  workDir: string;
  logs: Awaited<ReturnType<typeof openComponentLogs>>;
  secrets?: PlacedSecrets;
}

/**
 * The shell of a prepared start: waits for a line on fd 3, then execs the program ("$@") with fd 3 closed. A shell
 * exports PWD (and some SHLVL) of its own: unset again unless the component's environment has them, so that the
 * program sees exactly the environment a direct start gives it. EOF (the agent died) runs nothing.
 */
function gateScript(env: Record<string, string>): string {
  const own = ['PWD', 'SHLVL', 'OLDPWD'].filter((v) => !(v in env));
  return `read -r _ <&3 || exit 125; ${own.length ? `unset ${own.join(' ')}; ` : ''}exec "$@" 3<&-`;
}

/** Spawns what `prepareSpawn` prepared; `gated`: behind a shell that execs the program once its fd 3 has a line. */
export async function spawnPrepared(
  c: DesiredComponent,
  p: PreparedSpawn,
  gated: boolean,
  o: SpawnWith,
): Promise<{ instance: Instance; gate?: Writable }> {
  const { priv, env, file, logs, command: exec } = p;
  const argv = gated
    ? [...priv.setprivArgs, '--', '/bin/sh', '-c', gateScript(env), 'sh', file, ...p.args]
    : [...priv.setprivArgs, '--', file, ...p.args];
  let child: ChildProcess;
  try {
    child = spawn(o.setprivPath, argv, {
      cwd: p.workDir,
      env,
      stdio: gated ? ['ignore', logs.stdoutFd, logs.stderrFd, 'pipe'] : ['ignore', logs.stdoutFd, logs.stderrFd],
      detached: true,
    });
  } catch (e) {
    await logs.close();
    await p.secrets?.discard();
    // Node's checks of the options quote the offending value: said without any secret, and not kept as a cause.
    throw new RuntimeError('KS_START_FAILED', `cannot start ${c.name}: ${o.secrets.scrub(c, (e as Error).message)}`, {
      component: c.name,
      command: exec,
    });
  }
  // Listen before the first await: a spawn failure is emitted on the next tick.
  const spawnError = new Promise<Error>((r) => child.once('error', r));
  child.on('error', () => {}); // later errors (a failed kill) are not crashes of the agent
  const exited = new Promise<ExitStatus>((r) => child.once('exit', (code, sig) => r({ code, signal: sig })));
  const pid = child.pid;
  // Read before the event loop can reap the child: until then /proc/<pid> exists even if it has exited.
  const startTime = pid === undefined ? undefined : processStartTime(pid);
  child.unref(); // the agent may exit (or be killed) while its components run on
  const gate = gated ? ((child.stdio[3] as (Writable & { unref?: () => void }) | null) ?? undefined) : undefined;
  gate?.on('error', () => {}); // a gate whose shell died: the exit says so
  gate?.unref?.();
  await logs.close(); // the child has its own copies of the descriptors now
  if (pid === undefined) {
    gate?.destroy();
    await p.secrets?.discard();
    const err = await spawnError;
    throw new RuntimeError(
      'KS_START_FAILED',
      `cannot start ${c.name}: ${o.secrets.scrub(c, err.message)}`,
      { component: c.name, command: exec },
      { cause: err },
    );
  }
  if (startTime === undefined) {
    gate?.destroy();
    await p.secrets?.discard();
    throw new RuntimeError('KS_START_FAILED', `${c.name} (pid ${pid}) vanished before it could be identified`, {
      component: c.name,
      pid,
    });
  }
  const ref: InstanceRef = { kind: 'process', pid, startTime };
  if (p.secrets) {
    await p.secrets.bind(ref);
    o.releaseSecretsOnExit(ref, exited);
  }
  return { instance: { ref, exited }, ...(gate && { gate }) };
}
