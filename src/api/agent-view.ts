// Which agent answers (GET /v1/revision's `agent`): its pid and version, so that an operator stops this agent, not
// every `keystone agent` on a shared machine, and knows which release runs.
import { packageVersion } from '../cli/version.js';
import type { ApiContext } from './api-context.js';

export interface AgentSelf {
  pid: number;
  version: string;
}

export interface AgentView extends AgentSelf {
  /** ISO; when the API was built, which is when the agent finished starting, near enough. */
  startedAt: string;
}

/** The process the API runs in: the agent's own (the API is never served from anywhere else). */
export function ownAgentSelf(): AgentSelf {
  return { pid: process.pid, version: packageVersion() };
}

export function agentView(ctx: Pick<ApiContext, 'self' | 'startedAt'>): AgentView {
  return { pid: ctx.self.pid, version: ctx.self.version, startedAt: new Date(ctx.startedAt).toISOString() };
}
