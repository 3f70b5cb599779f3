// The warning an agent start gives about adopted processes still running as root (run-agent.ts): apart from the
// composition root, which wires and does not inspect.
import type { Logger } from '../log/logger.js';
import { isSameProcess, processUid } from '../runtime/proc-identity.js';
import type { Agent } from './agent.js';

/**
 * Adopted, not started: a process an earlier version (or an --allow-root run) started as root keeps running as root
 * until it restarts. Said loudly rather than restarted behind the operator's back (the agent's own restart never
 * restarts a healthy component).
 */
export function warnRootProcesses(agent: Agent, allowRoot: boolean, log: Logger): void {
  if (allowRoot || (process.getuid?.() ?? 0) !== 0) return;
  for (const rec of agent.store.components())
    if (
      rec.instance?.kind === 'process' &&
      isSameProcess(rec.instance.pid, rec.instance.startTime) &&
      processUid(rec.instance.pid) === 0
    )
      log.warn(
        { component: rec.name, pid: rec.instance.pid },
        'runs as root, started before this device refused root process users: `keystonectl restart` it (or apply a revision that changes it) to run it as its recipe user or the unprivileged default',
      );
}
