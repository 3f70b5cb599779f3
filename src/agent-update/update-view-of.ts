// What GET /v1/revision's agent.update says, read from an updater's trial, what it saw it cannot do, and the failed
// record in its home (agent-updater.ts's view()). A pure read, apart from the updater's decisions.
import { readFailed, type AgentHome, type AgentUpdateView, type Trial } from './agent-home.js';
import { isoTime } from '../core/iso-time.js';

/**
 * The trial first (with `waiting`: the version the newest revision taken up names meanwhile, which it defers), then an
 * unsupported update the fleet asked for, then the last version put back; else nothing.
 */
export function updateViewOf(
  trial: Trial | undefined,
  unsupportedSeen: { version: string; reason: string } | undefined,
  home: AgentHome,
  waiting?: { version: string; commit: string },
): AgentUpdateView | undefined {
  if (trial)
    return {
      state: 'trial',
      version: trial.version,
      commit: trial.commit,
      since: isoTime(trial.since),
      ...(waiting !== undefined &&
        waiting.version !== trial.version && { next: waiting.version, nextCommit: waiting.commit }),
    };
  if (unsupportedSeen)
    return { state: 'unsupported', version: unsupportedSeen.version, reason: unsupportedSeen.reason };
  const failed = readFailed(home);
  if (failed)
    return {
      state: 'failed',
      version: failed.version,
      commit: failed.commit,
      reason: failed.reason,
      since: isoTime(failed.at),
    };
  return undefined;
}
