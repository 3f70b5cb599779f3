// What every route group gets from buildServer: the agent, the waits and the log.
import type { DevicePolicy } from '../core/device-policy.js';
import type { Logger } from '../log/logger.js';
import type { ApiAgent } from './api-deps.js';
import type { OperatorWaits } from './operator-waits.js';

export interface ApiContext {
  agent: ApiAgent;
  waits: OperatorWaits;
  log?: Logger;
  now: () => number;
  /** ms, when the server was built (the agent's uptime, near enough). */
  startedAt: number;
  /** The GitHub webhook's secret and followed ref; absent when webhooks are off. */
  webhook?: { secret: string; ref: string };
  /** The device policy; absent for servers built without one (tests): shown as the safe defaults. */
  policy?: DevicePolicy;
}
