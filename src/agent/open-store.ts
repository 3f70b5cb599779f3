// How an agent start (agent.ts) opens its state store, and takes back the copy from before an agent update that was
// put back. Apart from the assembly: one decision about the store's schema.
import { join } from 'node:path';
import { openStateStore, STATE_DB_FILE, StateStoreError, type StateStore } from '../store/state-store.js';
import type { AgentOptions } from './agent-options.js';

/** The state store; after an agent update was put back, the copy from before it if the new version migrated past this one. */
export function openStore(opts: AgentOptions, now: () => number): StateStore {
  try {
    return openStateStore(opts.stateDir, { now });
  } catch (e) {
    if (!(
      e instanceof StateStoreError &&
      e.code === 'KS_STATE_SCHEMA_TOO_NEW' &&
      opts.agentUpdate?.restoreStore(join(opts.stateDir, STATE_DB_FILE))
    ))
      throw e;
    return openStateStore(opts.stateDir, { now });
  }
}
