// What the agent observes as it happens, for metrics, the dashboard's stream and API calls that wait.
import { EventEmitter } from 'node:events';
import type { Reconcile } from '../core/diff.js';
import type { Logger } from '../log/logger.js';
import type { InstanceRef } from '../runtime/runtime.js';
import type { ComponentState } from '../store/state-store.js';

/**
 * Emitted synchronously from inside the writer, so listeners must be cheap; one that throws is logged and does not
 * disturb the agent. Outcomes (revision, resumed, recovered, applying, held, waiting) come from outcomes.ts alone.
 */
export interface AgentEventMap {
  /** A state recorded for a component (the store's record is already written). */
  state: [{ component: string; state: ComponentState; reason?: string }];
  /** A new instance was spawned and recorded (state `starting`). */
  started: [{ component: string; instance: InstanceRef }];
  /** The supervisor counted a restart after an exit; `restarts` is the component's current count. */
  restart: [{ component: string; restarts: number }];
  /** One health probe, from the readiness wait or the monitor. */
  probe: [{ component: string; ok: boolean; latencyMs: number }];
  /** A revision went through the loop: applied (success or failure) or refused before it was applied. */
  revision: [
    {
      revision: string;
      outcome: 'success' | 'failure' | 'rejected';
      durationMs: number;
      summary: string;
      /** What failed (outcome failure). */
      failed?: Array<{ name: string; reason: string }>;
      /** The reconcile that was carried out (success and failure). */
      reconcile?: Reconcile;
      /** The fleet.toml target the plan came from. */
      target?: string;
      /** The device's rollout wave for this commit (SPEC §14). */
      wave?: string;
    },
  ];
  /**
   * The revision the device ran was offered again (an agent restart) and taken up where it stood: what stopped while
   * the agent was down started again, adopted instances health-checked. Its outcome stands, nothing is reported.
   */
  resumed: [{ revision: string; outcome: 'success' | 'failure'; summary: string }];
  /** Every component of a revision whose apply failed is healthy again: its own event, never a success (SPEC §5). */
  recovered: [{ revision: string; summary: string }];
  /** A revision passed verification and validation: what applying it stops and starts. */
  applying: [{ revision: string; reconcile: Reconcile; target?: string; wave?: string }];
  /**
   * A commit verified and valid for this device but held at its rollout's gate (SPEC §14), or halted there for good.
   * Emitted when the reason's kind changes (another wave waited for, halted), not on every look.
   */
  held: [{ revision: string; target?: string; wave: string; reason: string; halted: boolean }];
  /**
   * A revision that would stop a component holding its update lock (SPEC §19): nothing of it is applied until the
   * lock is let go (or its lock_timeout passes). Emitted when the reason changes, not on every look.
   */
  waiting: [{ revision: string; target?: string; wave?: string; reason: string }];
  /** A revision waiting to be applied was replaced by a newer one before its turn. */
  superseded: [{ revision: string; by: string }];
  /** An image pull for a container component, at most once a second while bytes flow (emitted by the runtime's owner). */
  pull: [{ component: string; image: string; status: string; currentBytes: number; totalBytes: number }];
}

export type Emit = <K extends keyof AgentEventMap>(name: K, ...args: AgentEventMap[K]) => void;

/** The agent's emitter and an emit that logs a listener's failure instead of throwing it into the writer. */
export function agentEvents(log: Logger): { events: EventEmitter<AgentEventMap>; emit: Emit } {
  const events = new EventEmitter<AgentEventMap>();
  const emit: Emit = (name, ...args) => {
    try {
      (events.emit as (event: string, ...a: unknown[]) => boolean).call(events, name, ...args);
    } catch (e) {
      log.error({ err: e as Error, event: name }, 'an agent event listener failed');
    }
  };
  return { events, emit };
}
