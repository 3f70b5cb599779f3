// Which agent answers (GET /v1/revision's `agent`): its pid and version, so that an operator stops this agent, not
// every `keystone agent` on a shared machine, and knows which release runs; and the device's health as its reports
// carry it (SPEC §8), read at each request (a few small files and a statfs), for the dashboard's header; and an agent
// update on trial, put back, or not possible here (SPEC §17), for keystonectl status and the dashboard.
import { deviceHealth } from '../agent/device-health.js';
import type { AgentUpdateView } from '../agent-update/agent-home.js';
import type { DeviceHealth } from '../report/commit-status.js';
import type { AgentSelf } from './agent-self.js';
import type { ApiContext } from './api-context.js';

export interface AgentView extends AgentSelf {
  /** ISO; when the API was built, which is when the agent finished starting, near enough. */
  startedAt: string;
  /** Each value only when the device has it (no thermal zone: no tempC). */
  health: DeviceHealth;
  /** Only while there is something to say about an agent update (SPEC §17): on trial, put back, or unsupported here. */
  update?: AgentUpdateView;
}

export function agentView(ctx: Pick<ApiContext, 'self' | 'startedAt'> & { agent: Pick<ApiContext['agent'], 'health' | 'agentUpdate'> }): AgentView {
  const update = ctx.agent.agentUpdate?.();
  return { pid: ctx.self.pid, version: ctx.self.version, startedAt: new Date(ctx.startedAt).toISOString(), health: ctx.agent.health?.() ?? deviceHealth(), ...(update && { update }) };
}
