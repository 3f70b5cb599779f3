// The shapes the agent's API answers with that the server names no type for (GET /v1/revision, /v1/history, an
// action's dry run); the rest are the server's own (src/api/views.ts, imported as types: esbuild drops them).
import type { AgentView, ComponentView, GroupView, RejectedView } from '../../src/api/views.js';

export type ListItem = ComponentView | GroupView;

export const isGroup = (c: ListItem): c is GroupView => Array.isArray((c as Partial<GroupView>).members);

export interface RolloutHold {
  revision: string;
  target: string | null;
  wave: string;
  reason: string;
  checkedAt: string | null;
}

export interface DeviceHold {
  revision: string;
  reason: string;
  since: string | null;
  holders: Array<{ component: string; lock: string; timeoutAt: string | null }>;
}

/** GET /v1/revision (src/api/routes/revision-routes.ts), the parts the page reads. */
export interface Revision {
  id: string;
  source: string;
  planFile: string;
  target: string | null;
  unsigned: boolean;
  signedAt: string | null;
  signers?: string[] | null;
  wave?: string | null;
  appliedAt: string | null;
  sync?: {
    following?: string | null;
    suspended?: { since: string | null; revision: string; reason?: string } | null;
    held?: string | null;
  };
  rollout?: RolloutHold[];
  /** A newer revision waiting on this device for a component's update lock (SPEC §19). */
  waiting?: DeviceHold | null;
  rolledBack?: Array<{ group: string; [k: string]: unknown }>;
  warning?: string;
  agent?: AgentView;
  rejected?: RejectedView | null;
}

export interface Reconcile {
  stopOrder: string[];
  startOrder: string[];
  noTouch?: string[];
  reasons?: Record<string, string>;
}

/** One entry of GET /v1/history (revision-routes.ts historyView). */
export interface HistoryEntry {
  id: number;
  revision: string;
  planFile: string;
  target: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: string;
  summary: string | null;
  failed: Array<{ name: string; reason: string }>;
  reconcile: Reconcile | null;
}

export interface HistoryPage {
  entries: HistoryEntry[];
  nextBefore: number | null;
}

export type ActionName = 'restart' | 'stop' | 'start';

/** A dry run's answer: which components the action would stop and start (and, for a start, wait for). */
export interface ActionPlan {
  stopOrder?: string[];
  startOrder?: string[];
  waitingFor?: string[];
}
