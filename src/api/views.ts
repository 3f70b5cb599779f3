// The shapes the API answers with, as types alone: a leaf that imports only types from other leaves (no node:, no
// SQLite, no Fastify), so that the dashboard (web/src) type-checks against the server's own views instead of copies.
// The modules that build them (component-view.ts, group-view.ts, agent-view.ts, rejected-view.ts, graph-routes.ts)
// re-export them from here.
import type { AgentUpdateView } from '../agent-update/agent-update-view.js';
import type { DeviceHealth } from '../core/device-health.js';
import type { DependencyType, GroupKind } from '../core/unit-kinds.js';
import type { ComponentDependency, ComponentState } from '../store/component-state.js';

export type { AgentUpdateView, ComponentDependency, ComponentState, DependencyType, DeviceHealth, GroupKind };

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
