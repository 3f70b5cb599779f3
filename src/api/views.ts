// The shapes the API answers with, as types alone: a leaf that imports only types from other leaves (no node:, no
// SQLite, no Fastify), so that the dashboard (web/src) type-checks against the server's own views instead of copies.
// The modules that build them (component-view.ts, group-view.ts, agent-view.ts, rejected-view.ts, graph-routes.ts)
// re-export them from here.
import type { AgentUpdateView } from '../agent-update/agent-update-view.js';
import type { DeviceHealth } from '../core/device-health.js';
import type { DevicePolicyView } from '../core/device-policy-view.js';
import type { DependencyType, GroupKind } from '../core/unit-kinds.js';
import type { ComponentDependency, ComponentState } from '../store/component-state.js';

export type {
  AgentUpdateView,
  ComponentDependency,
  ComponentState,
  DependencyType,
  DeviceHealth,
  DevicePolicyView,
  GroupKind,
};

/** One component (GET /v1/components, /v1/components/:name); a group's unit too. Times are ISO 8601. */
export interface ComponentView {
  name: string;
  state: ComponentState;
  /** The live process's pid; null for a container or while nothing runs. */
  pid: number | null;
  /** The container's id; null for a process or while nothing runs. */
  containerId: string | null;
  version: string;
  hash: string;
  runtime: 'process' | 'container';
  /** `healthy` (state running), `unhealthy`, or `unknown` while it is not running, still starting, or adopted unchecked. */
  health: 'healthy' | 'unhealthy' | 'unknown';
  healthCheck: string | null;
  /** Restarts since its last healthy spell (the crash-loop budget of SPEC §5). */
  restarts: number;
  /** When it entered its state. */
  since: string;
  healthySince: string | null;
  reason: string | null;
  /** Held stopped by an operator (`:stop`) or by a crash loop, until started or changed by a revision. */
  held: boolean;
  revision: string | null;
  dependencies: ComponentDependency[];
  /** The configuration and bound values it runs with (`config.port` → `18090`); null when its recipe has none. */
  inputs: Record<string, string> | null;
  /** How its last instance ended: `{code, signal, at}`; null when none has ended since it was first recorded. */
  lastExit: { code: number | null; signal: string | null; at: string } | null;
}

/** A plan component made of several units (a composite, a recipe's services, replicas), its members nested. */
export interface GroupView {
  name: string;
  kind: GroupKind;
  state: ComponentState;
  pid: null;
  containerId: null;
  version: string;
  health: 'healthy' | 'unhealthy' | 'unknown';
  /** Restarts of all members since their last healthy spells. */
  restarts: number;
  held: boolean;
  members: ComponentView[];
}

/** Which agent answers: its pid and version. */
export interface AgentSelf {
  pid: number;
  version: string;
}

/** GET /v1/revision's `agent`. */
export interface AgentView extends AgentSelf {
  /** ISO; when the API was built, which is when the agent finished starting, near enough. */
  startedAt: string;
  /** Each value only when the device has it (no thermal zone: no tempC). */
  health: DeviceHealth;
  /** Only while there is something to say about an agent update (SPEC §17): on trial, put back, or unsupported here. */
  update?: AgentUpdateView;
}

/** GET /v1/revision's `rejected`: the newest revision the agent refused, while nothing newer was applied. */
export interface RejectedView {
  revision: string;
  /** ISO */
  at: string;
  /** The stable code of the refusal (`KS_SIGNATURE_REPLAYED`); null when the reason carries none. */
  code: string | null;
  /** The reason as recorded in the history (and reported on the commit). */
  reason: string;
}

/** GET /v1/graph: the layers the units start in, one edge per dependency (`from` depends on `to`), the groups. */
export interface GraphView {
  layers: string[][];
  edges: Array<{ from: string; to: string; type: DependencyType }>;
  groups: Array<{ name: string; kind: string; members: string[] }>;
}

/** A newer commit held at the rollout gate (SPEC §14), and why: `held: waiting for wave …`. */
export interface RolloutHoldView {
  revision: string;
  target: string | null;
  wave: string;
  reason: string;
  checkedAt: string | null;
}

/** A newer revision waiting on this device (SPEC §19): for components' update locks, or for the maintenance window. */
export interface DeviceHoldView {
  revision: string;
  reason: string;
  since: string | null;
  holders: Array<{ component: string; lock: string; timeoutAt: string | null }>;
  /** Held for the maintenance window: when it opens; null for update locks. */
  opensAt: string | null;
}

/** What the device follows, and whether a forced manual apply holds the Git sync (until POST /v1/resume). */
export interface SyncView {
  following: 'git' | 'directory';
  suspended: { since: string | null; revision: string; reason: string } | null;
  /** A revision the source found while suspended, applied on resume. */
  held: string | null;
}

/** How the applied revision's apply ended (SPEC §5), and a later recovery: a recovery never turns it into a success. */
export interface ApplyOutcomeView {
  apply: 'success' | 'failure' | 'rejected' | 'recovered' | 'applying';
  summary: string | null;
  finishedAt: string | null;
  recovered: { at: string | null; summary: string | null } | null;
}

/** GET /v1/revision: the applied revision, how it was applied, what waits, and which agent answers. */
export interface RevisionView {
  id: string;
  source: string;
  planFile: string;
  /** The fleet.toml target the plan came from (SPEC §13); null for --plan or a manual apply. */
  target: string | null;
  unsigned: boolean;
  signedAt: string | null;
  /** The keys whose signatures counted; null when unsigned (or applied by an agent that did not keep them). */
  signers: string[] | null;
  /** This device's rollout wave for the commit (SPEC §14); null outside a staged rollout. */
  wave: string | null;
  appliedAt: string | null;
  outcome: ApplyOutcomeView | null;
  sync: SyncView;
  rollout: RolloutHoldView[];
  waiting: DeviceHoldView | null;
  /** Composites this revision could not update: rolled back, and held at their previous members. */
  rolledBack: Array<{ group: string; revision: string }>;
  policy: DevicePolicyView;
  /** Only on an unsigned revision: said in words, for a dashboard that shows only messages. */
  warning?: string;
  agent: AgentView;
  rejected: RejectedView | null;
}

/** The reconcile as the history keeps it: what an apply stopped, started and left alone, and why. */
export interface ReconcileView {
  stopOrder: string[];
  startOrder: string[];
  noTouch: string[];
  reasons: Record<string, string>;
}

/** One entry of GET /v1/history: an apply or a rejected revision; `applying` while unfinished. */
export interface HistoryEntryView {
  id: number;
  revision: string;
  planFile: string;
  target: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: 'success' | 'failure' | 'rejected' | 'recovered' | 'applying';
  summary: string | null;
  failed: Array<{ name: string; reason: string }>;
  reconcile: ReconcileView | null;
}

/** GET /v1/history: newest first; `nextBefore` the cursor of the next (older) page, null on the last. */
export interface HistoryPageView {
  entries: HistoryEntryView[];
  nextBefore: number | null;
  /** What waits has no row yet: said beside the rows, on the first page (null on later pages). */
  waiting: DeviceHoldView | null;
}

/** An action's dry run (`POST /v1/components/:name:restart?dry=1`…): what it would stop, start, and wait for. */
export interface ActionPlanView {
  stopOrder?: string[];
  startOrder?: string[];
  waitingFor?: string[];
}
