// The shapes the agent's API answers with (docs: the dashboard contract). The page reads them tolerantly: a state
// or outcome it does not know is still shown as its word, so these stay `string` where the server may grow values.

export type Runtime = 'process' | 'container';
export type Health = 'healthy' | 'unhealthy' | 'unknown';

export interface Dependency {
  component: string;
  type: 'hard' | 'ordering';
}

export interface LastExit {
  code: number | null;
  signal: string | null;
  at: string;
}

export interface ComponentView {
  name: string;
  state: string;
  pid: number | null;
  containerId: string | null;
  version: string;
  hash: string;
  runtime: Runtime;
  health: Health | string;
  healthCheck: string | null;
  restarts: number;
  since: string;
  healthySince: string | null;
  reason: string | null;
  held: boolean;
  revision: string | null;
  dependencies: Dependency[];
  inputs: Record<string, string> | null;
  lastExit?: LastExit | null;
  members?: undefined;
}

export interface GroupView {
  name: string;
  kind: 'composite' | 'services' | 'replicas' | string;
  state: string;
  pid: null;
  containerId: null;
  version: string;
  health: Health | string;
  restarts: number;
  held: boolean;
  members: ComponentView[];
}

export type ListItem = ComponentView | GroupView;

export const isGroup = (c: ListItem): c is GroupView => Array.isArray(c.members);

export interface GraphEdge {
  from: string;
  to: string;
  type: 'hard' | 'ordering' | string;
}

export interface Graph {
  layers: string[][];
  edges: GraphEdge[];
  groups?: Array<{ name: string; kind: string; members: string[] }>;
}

export interface AgentInfo {
  pid: number;
  version: string;
  startedAt?: string;
  /** The device's health as its reports carry it; each value only where the device has it. */
  health?: DeviceHealth;
  /** An agent update to tell of (SPEC §17); absent when there is none. */
  update?: AgentUpdate;
}

/** src/agent-update/agent-home.ts AgentUpdateView: a version on trial, one put back, or one this agent cannot update itself to. */
export interface AgentUpdate {
  state: 'trial' | 'failed' | 'unsupported' | string;
  version: string;
  commit?: string;
  reason?: string;
  /** ISO. */
  since?: string;
}

export interface DeviceHealth {
  uptimeS?: number;
  load1?: number;
  memFreeBytes?: number;
  diskFreeBytes?: number;
  tempC?: number;
}

export interface Rejected {
  revision: string;
  at: string;
  code: string | null;
  reason: string;
}

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
  agent?: AgentInfo;
  rejected?: Rejected | null;
}

export interface Reconcile {
  stopOrder: string[];
  startOrder: string[];
  noTouch?: string[];
  reasons?: Record<string, string>;
}

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
