// Which agent answers: its pid and version. A leaf, so that the API's context and deps can name it without importing
// the view of the agent that reads them (agent-view.ts).
import { packageVersion } from '../package-manifest.js';
import type { AgentSelf } from './views.js';

export type { AgentSelf };

/** The process the API runs in: the agent's own (the API is never served from anywhere else). */
export function ownAgentSelf(): AgentSelf {
  return { pid: process.pid, version: packageVersion() };
}
