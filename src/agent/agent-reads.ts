// Answers the agent (agent.ts) reads from its parts: the commits whose rollout refs it keeps, the revision that
// waits, the runtime of a kind. Reads, apart from the assembly.
import { isCommitId } from '../git/commit-id.js';
import type { Runtime } from '../runtime/runtime.js';
import type { StateStore } from '../store/state-store.js';
import type { AgentOptions } from './agent-options.js';
import { recentFailures } from './outcome-reads.js';
import type { DeviceHold } from './update-lock-wait.js';
import type { WindowHold } from './window-wait.js';

/** The commits whose rollout refs this device keeps: the one it runs, those it holds (`held`), and its recent failures. */
export function rolloutKeep(store: StateStore, held: Iterable<string>): string[] {
  const applied = store.appliedRevision()?.id;
  return [
    ...new Set([...(applied !== undefined && isCommitId(applied) ? [applied] : []), ...held, ...recentFailures(store)]),
  ];
}

/** The revision waiting for update locks, else the one waiting for its maintenance window (SPEC §19). */
export function waitingHold(
  lockWait: { hold(): DeviceHold | undefined },
  windowWait: { hold(): WindowHold | undefined },
): DeviceHold | undefined {
  const w = windowWait.hold();
  return (
    lockWait.hold() ??
    (w && { revision: w.revision, reason: w.reason, since: w.since, holders: [], opensAt: w.opensAt })
  );
}

/** The runtime of `kind`; KS_RUNTIME_UNAVAILABLE when this device has none. */
export function runtimeOfKind(runtimes: AgentOptions['runtimes']): (kind: 'process' | 'container') => Runtime {
  return (kind) => {
    const r = runtimes[kind];
    if (!r) throw Object.assign(new Error(`no ${kind} runtime on this device`), { code: 'KS_RUNTIME_UNAVAILABLE' });
    return r;
  };
}
