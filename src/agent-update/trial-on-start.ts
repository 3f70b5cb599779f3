// The trial an agent finds at its start (SPEC §17): its own version's, on probation; or another version's, whose
// switch was cut short or which was put back, ended here. Apart from agent-updater.ts, whose constructor asks.
import type { Logger } from '../log/logger.js';
import { readFileSync, rmSync } from 'node:fs';
import { readFailed, readTrial, writeFailed, type AgentHome, type Trial } from './agent-home.js';

/** The trial this agent is on, if any (a trial of its own version); a trial of another version is ended. */
export function trialOnStart(d: {
  home: AgentHome;
  version: string;
  unsupported?: string;
  log: Logger;
  now: () => number;
}): Trial | undefined {
  const trial = readTrial(d.home);
  if (trial && trial.version === d.version) return trial;
  if (trial && !d.unsupported) {
    // A trial of another version, and this one runs. Started once (this start, counted by the launcher): the switch
    // was cut short before `current` moved (a power loss between the two writes), the new version never ran, and
    // the next revision tries again. Started more: the new version ran and was put back, and the record of why was
    // cut short; that package did not work here, and is not tried again until the fleet names another.
    if (trialStarts(d.home) <= 1)
      d.log.warn(
        { version: trial.version, commit: trial.commit },
        `agent update: the switch to ${trial.version} was cut short before it took; the next revision tries again`,
      );
    // (A record agent-rollback wrote already, with the reason, is kept.)
    else if (readFailed(d.home)?.sha256 !== trial.sha256)
      writeFailed(d.home, {
        version: trial.version,
        sha256: trial.sha256,
        commit: trial.commit,
        reason: `${trial.version} was put back, and the switch from ${d.version} did not complete`,
        at: d.now(),
        blocks: true,
      });
    rmSync(d.home.trial, { force: true });
    rmSync(d.home.trialStarts, { force: true });
  }
  return undefined;
}

/** How many times the launcher started the agent since the trial was written (0 without the launcher). */
function trialStarts(home: AgentHome): number {
  try {
    return readFileSync(home.trialStarts, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
}
