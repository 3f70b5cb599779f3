// What the API needs from the agent, as narrow as the routes use it: reads from the store, actions only through the
// engine (the one writer), events for waits and metrics. The real Agent satisfies it; tests may pass less.
import type { EventEmitter } from 'node:events';
import type { Agent, AgentEventMap } from '../agent/agent.js';
import type { AgentUpdateView } from '../agent-update/agent-home.js';
import type { Engine } from '../agent/engine.js';
import type { DevicePolicy } from '../core/device-policy.js';
import type { Logger } from '../log/logger.js';
import type { StateStore } from '../store/state-store.js';
import type { AgentSelf } from './agent-self.js';
import type { ConnectionLimits } from './connection-limits.js';
import type { RefusalLogOptions } from './refusal-log.js';

export interface ApiAgent {
  store: Pick<StateStore, 'components' | 'component' | 'appliedRevision' | 'history' | 'historyOf'> &
    Partial<Pick<StateStore, 'groupRollbacks'>>;
  engine: Pick<Engine, 'desired' | 'restartOrders' | 'restart' | 'stop' | 'start' | 'pidOf' | 'unitsOf'> &
    Partial<Pick<Engine, 'healthCheckOf' | 'startOrders' | 'unproven'>>;
  events: EventEmitter<AgentEventMap>;
  /** POST /v1/sync; false when no source can look on demand. */
  sync(): boolean;
  /** POST /v1/sync?wait=done: sync() and the end of what that look found; absent, such a wait is not offered (501). */
  syncSettled?: Agent['syncSettled'];
  /** POST /v1/apply, /v1/resume and the sync state in GET /v1/revision. */
  applyManual: Agent['applyManual'];
  resume: Agent['resume'];
  syncState: Agent['syncState'];
  /** Commits held at the rollout gate (SPEC §14), in GET /v1/revision. */
  rolloutHolds?: Agent['rolloutHolds'];
  /** The revision waiting for update locks (SPEC §19), in GET /v1/revision and /v1/history as `waiting`. */
  waiting?: Agent['waiting'];
  /** POST /v1/sync?now=true: the revision waiting for its maintenance window goes now. */
  goNow?: Agent['goNow'];
  /** Where a component's stdout.log and stderr.log are (GET /v1/logs/{name}); absent, the route answers 404. */
  logDirOf?: Agent['logDirOf'];
  /** Cleans text of the secret values the agent holds (SPEC §16): a component's log may print one. */
  scrubSecrets?: Agent['scrubSecrets'];
  /** The device's health in GET /v1/revision's `agent`; absent, it is read without the state directory's disk. */
  health?: Agent['health'];
  /**
   * The agent update to show in GET /v1/revision's `agent.update` (SPEC §17): a version on trial, one put back, or a
   * version the fleet names that this agent cannot update itself to; undefined: nothing to say. Read at each request.
   * Absent (tests, an agent composed without self-update): never shown.
   */
  agentUpdate?: () => AgentUpdateView | undefined;
}

export interface ApiDeps {
  agent: ApiAgent;
  /** What requests over TCP (all but /healthz, /metrics and the webhook) present as `Authorization: Bearer …` (the content of `<state-dir>/api-token`). */
  token: string;
  log?: Logger;
  /** Host header names accepted besides loopback ones; only for an agent listening publicly. Default: none. */
  isAllowedHost?: (hostname: string) => boolean;
  /** Request body cap in bytes; default 64 KiB (the API's bodies are small JSON objects). */
  bodyLimit?: number;
  /** ms clock (uptime in /healthz, the refusal log's intervals). */
  now?: () => number;
  /** Connections per listener and their timeouts; default DEFAULT_CONNECTION_LIMITS. */
  limits?: Partial<ConnectionLimits>;
  /** The refusal log's clock, interval, source cap and timer (tests); default one summary per source per minute. */
  refusalLog?: Partial<Pick<RefusalLogOptions, 'now' | 'intervalMs' | 'maxSources' | 'every'>>;
  /**
   * POST /v1/webhooks/github: the secret shared with GitHub (the route checks X-Hub-Signature-256 with it) and the
   * followed ref (`main`, or a full `refs/heads/…`). Without it the route answers 503 KS_WEBHOOK_DISABLED.
   */
  webhook?: { secret: string; ref: string };
  /** What this device allows recipes (SPEC §5), shown by GET /v1/revision and GET /v1/policy. */
  policy?: DevicePolicy;
  /** The agent's pid and version in GET /v1/revision (`agent`); default: this process and the package's version. */
  self?: AgentSelf;
  /**
   * The dashboard at `/` and its sessions (`--no-dashboard`: false). Default on, its files from dist/web; tests may
   * pass the directory, the session lifetime, the session cap and the random source.
   */
  dashboard?: false | { dir?: string; ttlMs?: number; maxSessions?: number; random?: (n: number) => Buffer };
}
