// A process component's install script run to its end (process-runtime.ts's install): its outcome turned into the
// runtime's errors. Apart from the runtime class because it is one step of install, with no state of its own.
import type { DesiredComponent } from '../core/desired-state.js';
import { cutLine, MAX_REASON_BYTES } from '../core/line-bound.js';
import { openComponentLogs, tailLines } from './log-files.js';
import type { PollClock } from './process-group.js';
import { runInGroup } from './run-in-group.js';
import { RuntimeError } from './runtime-error.js';

/** What the install script runs with: the privileges prefix, its work directory and environment, and its limits. */
export interface InstallScriptRun {
  /** `[setpriv, …options, '--']` (ProcessRuntime.privilegesArgv). */
  privilegesArgv: string[];
  workDir: string;
  logDir: string;
  env: Record<string, string>;
  signal: AbortSignal;
  clock: PollClock;
  /** The component's secret values taken out of a text (ComponentSecrets.scrub). */
  scrub: (text: string) => string;
}

/**
 * The install script by `sh -c` in the work directory as the run user, output appended to the component's logs, the
 * whole group killed at the recipe's timeout. Throws KS_INSTALL_FAILED / KS_INSTALL_TIMEOUT / KS_INSTALL_ABORTED.
 */
export async function runInstallScript(
  c: DesiredComponent,
  script: { script: string; timeout: number },
  o: InstallScriptRun,
): Promise<void> {
  const logs = await openComponentLogs(o.logDir);
  let r;
  try {
    r = await runInGroup([...o.privilegesArgv, '/bin/sh', '-c', script.script], {
      cwd: o.workDir,
      env: o.env,
      stdout: logs.stdoutFd,
      stderr: logs.stderrFd,
      timeoutMs: script.timeout,
      signal: o.signal,
      clock: o.clock,
    });
  } finally {
    await logs.close();
  }
  if (r.spawnError)
    throw new RuntimeError(
      'KS_INSTALL_FAILED',
      `install script of ${c.name} could not start: ${o.scrub(r.spawnError.message)}`,
      { component: c.name },
      { cause: r.spawnError },
    );
  if (r.timedOut)
    throw new RuntimeError(
      'KS_INSTALL_TIMEOUT',
      `install script of ${c.name} did not finish within ${script.timeout} ms and was killed`,
      {
        component: c.name,
        timeoutMs: script.timeout,
      },
    );
  if (r.aborted) throw aborted(c);
  if (r.code !== 0) {
    // Its last words, bounded: a script may write one line of any length (a line's end says the most).
    const last = (await tailLines(logs.stderrPath, 3, MAX_REASON_BYTES / 2)).join(' | ');
    const how = r.code !== null ? `exited with ${r.code}` : `was killed by ${r.signal}`;
    throw new RuntimeError(
      'KS_INSTALL_FAILED',
      cutLine(`install script of ${c.name} ${how}${last ? `: ${o.scrub(last)}` : ''}`, MAX_REASON_BYTES),
      {
        component: c.name,
        exitCode: r.code,
        signal: r.signal,
      },
    );
  }
}

export function aborted(c: DesiredComponent): RuntimeError {
  return new RuntimeError('KS_INSTALL_ABORTED', `install of ${c.name} was aborted`, { component: c.name });
}
