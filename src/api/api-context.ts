// What every route group gets from buildServer: the agent, the waits, the log, the refusal log and the device policy.
import type { DevicePolicy } from '../core/device-policy.js';
import type { Logger } from '../log/logger.js';
import type { AgentSelf } from './agent-self.js';
import type { ApiAgent } from './api-deps.js';
import type { OperatorWaits } from './operator-waits.js';
import type { RefusalLog } from './refusal-log.js';

export interface ApiContext {
  agent: ApiAgent;
  waits: OperatorWaits;
  /** Where refusals are logged (bounded per source). */
  refusals: RefusalLog;
  log?: Logger;
  now: () => number;
  /** ms, when the server was built (the agent's uptime, near enough). */
  startedAt: number;
  /** The agent's own pid and version. */
  self: AgentSelf;
  /** The GitHub webhook's secret and followed ref; absent when webhooks are off. */
  webhook?: { secret: string; ref: string };
  /** The device policy; absent for servers built without one (tests): shown as the safe defaults. */
  policy?: DevicePolicy;
}
