// One component as the API shows it (GET /v1/components): the store's record, the live pid from the engine, the
// health check from the applied revision. Times are ISO 8601 so that people and `jq` read them without arithmetic.
import type { ComponentRecord, ComponentState } from '../store/state-store.js';
import type { ApiAgent } from './api-deps.js';
import type { ComponentView } from './views.js';
import { isoTime } from '../core/iso-time.js';

export type { ComponentView };

const iso = (ms: number) => isoTime(ms);
const LIVE: ReadonlySet<ComponentState> = new Set(['starting', 'running', 'unhealthy', 'stopping']);

/** The pid or container id that runs `name` now, as the engine knows it (never a stale recorded pid). */
export function instanceOf(
  agent: ApiAgent,
  rec: ComponentRecord | undefined,
  name: string,
): { pid: number | null; containerId: string | null } {
  const pid = agent.engine.pidOf(name);
  if (pid !== undefined) return { pid, containerId: null };
  // Containers have no worker pid; their recorded id is current while the record says something runs.
  if (rec?.instance?.kind === 'container' && LIVE.has(rec.state)) return { pid: null, containerId: rec.instance.id };
  return { pid: null, containerId: null };
}

type RecordPart = Omit<ComponentView, 'pid' | 'containerId' | 'healthCheck'>;

/**
 * What a record alone decides, kept per record object: the store hands out the same frozen record until the row
 * changes, so under a polling dashboard each view is built once per change rather than once per request.
 */
const recordParts = new WeakMap<ComponentRecord, RecordPart>();
/** The applied revision's health checks by component, per desired state (a lookup per component, not a scan). */
const checksByDesired = new WeakMap<object, Map<string, string | null>>();

function recordPart(rec: ComponentRecord): RecordPart {
  let part = recordParts.get(rec);
  if (!part) {
    part = {
      name: rec.name,
      state: rec.state,
      version: rec.version,
      hash: rec.hash,
      runtime: rec.runtime,
      health: rec.state === 'running' ? 'healthy' : rec.state === 'unhealthy' ? 'unhealthy' : 'unknown',
      restarts: rec.restarts,
      since: iso(rec.since),
      healthySince: rec.healthySince === undefined ? null : iso(rec.healthySince),
      reason: rec.reason ?? null,
      held: rec.held || rec.state === 'crash-looping',
      revision: rec.revision ?? null,
      dependencies: rec.dependencies,
      inputs: rec.inputs ?? null,
      lastExit: rec.lastExit
        ? { code: rec.lastExit.code, signal: rec.lastExit.signal, at: iso(rec.lastExit.at) }
        : null,
    };
    if (Object.isFrozen(rec)) recordParts.set(rec, part);
  }
  return part;
}

function healthCheckOf(agent: ApiAgent, name: string): string | null {
  const running = agent.engine.healthCheckOf?.(name);
  if (running !== undefined) return running;
  const desired = agent.engine.desired;
  if (!desired) return null;
  let checks = checksByDesired.get(desired);
  if (!checks) {
    checks = new Map(desired.components.map((c) => [c.name, c.recipe.lifecycle.run.health?.check ?? null]));
    checksByDesired.set(desired, checks);
  }
  return checks.get(name) ?? null;
}

export function componentView(agent: ApiAgent, rec: ComponentRecord): ComponentView {
  const { name, state, ...rest } = recordPart(rec);
  // Key order as before: name, state, pid, containerId, version … (scripts may print the JSON as it comes).
  const { version, hash, runtime, health, ...tail } = rest;
  // An instance adopted after a restart is not assumed healthy (SPEC §5): `unknown` until its check has run, which
  // is at the first revision loaded (and never, while every revision offered is refused).
  const shown = agent.engine.unproven?.(name) ? 'unknown' : health;
  return {
    name,
    state,
    ...instanceOf(agent, rec, rec.name),
    version,
    hash,
    runtime,
    health: shown,
    healthCheck: healthCheckOf(agent, name),
    ...tail,
  };
}
