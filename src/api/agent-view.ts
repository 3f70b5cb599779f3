// Which agent answers (GET /v1/revision's `agent`): its pid and version, so that an operator stops this agent, not
// every `keystone agent` on a shared machine, and knows which release runs; and the device's health as its reports
// carry it (SPEC §8), read at each request (a few small files and a statfs), for the dashboard's header; and an agent
// update on trial, put back, or not possible here (SPEC §17), for keystonectl status and the dashboard.
import { deviceHealth } from '../agent/device-health.js';
import type { ApiContext } from './api-context.js';
import type { AgentView } from './views.js';
import { isoTime } from '../core/iso-time.js';

export type { AgentView };

export function agentView(
  ctx: Pick<ApiContext, 'self' | 'startedAt'> & { agent: Pick<ApiContext['agent'], 'health' | 'agentUpdate'> },
): AgentView {
  const update = ctx.agent.agentUpdate?.();
  return {
    pid: ctx.self.pid,
    version: ctx.self.version,
    startedAt: isoTime(ctx.startedAt),
    health: ctx.agent.health?.() ?? deviceHealth(),
    ...(update && { update }),
  };
}
