// POST /v1/components/{name}:restart|:stop|:start (SPEC §10). The engine does the work, one operation at a time; these
// handlers only check the request, hand the operation over, and wait for it as the caller asked.
import type { ApiReply } from '../api-reply.js';
import type { ApiRouter } from '../api-router.js';
import type { OperatorResult } from '../../agent/engine.js';
import type { RestartOrders } from '../../core/restart-cascade.js';
import { ApiError } from '../api-error.js';
import type { ApiContext } from '../api-context.js';
import { parseComponentTarget } from '../component-target.js';
import { instanceOf } from '../component-view.js';
import { parseBool, parseTimeout, parseWait, strictQuery, type WaitFor } from '../query-params.js';
import { isSocketRequest } from '../socket-request.js';
import type { WaitOutcome } from '../operator-waits.js';
import type { ActionPlanView } from '../views.js';
import { isoTime } from '../../core/iso-time.js';

/** The state of each component an operation touches, for a caller whose wait ran out. */
export interface ComponentProgress {
  name: string;
  state: string;
  pid: number | null;
  containerId?: string;
  reason: string | null;
  since: string | null;
}

/** Options go in the query string; a body, if any, must be an empty JSON object (it is never interpreted). */
function requireEmptyBody(body: unknown): void {
  if (body === undefined || body === null) return;
  if (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0) return;
  throw new ApiError(
    400,
    'KS_BAD_BODY',
    'component actions take their options in the query string; the body must be empty or {}',
  );
}

/** Engine errors a caller can cause become API errors; anything else stays a 500. */
function fromEngineError(e: unknown): never {
  const err = e as Error & { code?: string };
  if (err.code === 'KS_COMPONENT_NOT_FOUND') throw new ApiError(404, 'KS_COMPONENT_NOT_FOUND', err.message);
  throw e;
}

export function registerComponentActions(server: ApiRouter, ctx: ApiContext): void {
  const { engine, store } = ctx.agent;

  /** Waits for an operation as the caller asked (for it, or for its new instances, or until the timeout). */
  const waitFor = async (
    op: Promise<OperatorResult>,
    timeoutMs: number,
    starts: { done: Promise<void>; cancel(): void } | undefined,
  ): Promise<WaitOutcome<OperatorResult>> => {
    try {
      return await ctx.waits.wait(op, timeoutMs, starts?.done);
    } catch (e) {
      return fromEngineError(e);
    } finally {
      starts?.cancel();
    }
  };

  /** The cascade of `name` in the applied revision; 404 when the revision has no such component. */
  const ordersOf = (name: string): RestartOrders => {
    const orders = engine.restartOrders(name);
    if (!orders)
      throw new ApiError(404, 'KS_COMPONENT_NOT_FOUND', `no component ${JSON.stringify(name)} in the applied revision`);
    return orders;
  };

  /** `pid` (or `containerId` for a container) of what runs `name` now. */
  const instanceFields = (name: string): { pid: number | null; containerId?: string } => {
    const { pid, containerId } = instanceOf(ctx.agent, store.component(name), name);
    return containerId === null ? { pid } : { pid, containerId };
  };
  const idOf = (name: string): number | string | null => {
    const { pid, containerId } = instanceFields(name);
    return pid ?? containerId ?? null;
  };

  /** The units `name` stands for: itself, or a group's members (`app` → `app/web`, `app/proxy`). */
  const unitsOf = (name: string): string[] => engine.unitsOf(name) ?? [name];
  /** For a group: the pid or container id of each member, since the group itself has none. */
  const membersOf = (name: string, units: readonly string[]): { members?: Record<string, number | string | null> } =>
    units.length === 1 && units[0] === name ? {} : { members: Object.fromEntries(units.map((u) => [u, idOf(u)])) };

  const progress = (names: readonly string[]): ComponentProgress[] =>
    names.map((name) => {
      const rec = store.component(name);
      return {
        name,
        state: rec?.state ?? 'unknown',
        ...instanceFields(name),
        reason: rec?.reason ?? null,
        since: rec ? isoTime(rec.since) : null,
      };
    });

  /** The answers every action shares when the wait did not end in success. */
  const unfinished = (
    outcome: WaitOutcome<OperatorResult>,
    what: string,
    names: readonly string[],
    timeoutText: string,
    failedCode: 'KS_RESTART_FAILED' | 'KS_STOP_FAILED' | 'KS_START_FAILED',
  ): ApiError | undefined => {
    if (outcome.kind === 'closing')
      return new ApiError(
        503,
        'KS_SHUTTING_DOWN',
        `the agent is shutting down; the ${what} was handed to it and finishes before it exits`,
        { components: progress(names) },
      );
    if (outcome.kind === 'timeout')
      return new ApiError(
        504,
        'KS_WAIT_TIMEOUT',
        `the ${what} did not finish within ${timeoutText}; it goes on in the agent`,
        { timeout: timeoutText, components: progress(names) },
      );
    if (outcome.kind === 'done' && outcome.result.execution.failed.length > 0) {
      const failed = outcome.result.execution.failed;
      // 502 beside the 504 above: the components behind the agent failed, as an upstream behind a gateway would.
      return new ApiError(
        502,
        failedCode,
        `the ${what} failed: ${failed.map((f) => `${f.name}: ${f.reason}`).join('; ')}`,
        { failed, components: progress(names) },
      );
    }
    return undefined;
  };

  /** The engine logs the failure of an operation nobody waits for; this only keeps its rejection from going unhandled. */
  const detached = (op: Promise<unknown>, name: string, action: string) =>
    void op.catch((e: Error) => ctx.log?.error({ component: name, action, err: e }, 'operator action failed'));

  async function restart(name: string, query: unknown, reply: ApiReply) {
    const q = strictQuery(query, ['dry', 'wait', 'timeout']);
    const dry = parseBool('dry', q.dry, false);
    const wait = parseWait(q.wait);
    const timeout = parseTimeout(q.timeout);
    const orders = ordersOf(name);
    // Exactly the two orders (SPEC §10): a pure read of the applied revision, nothing is queued.
    if (dry) return { stopOrder: orders.stopOrder, startOrder: orders.startOrder } satisfies ActionPlanView;

    const starts = wait === 'started' ? ctx.waits.starts(orders.startOrder) : undefined;
    const op = engine.restart(name);
    if (wait === 'none') {
      detached(op, name, 'restart');
      return reply
        .code(202)
        .send({ component: name, stopOrder: orders.stopOrder, startOrder: orders.startOrder, wait });
    }
    const outcome = await waitFor(op, timeout.ms, starts);
    const failure = unfinished(outcome, `restart of ${name}`, orders.startOrder, timeout.text, 'KS_RESTART_FAILED');
    if (failure) throw failure;
    // The new instances: the engine's workers hold them once each is started (and, for wait=health, healthy).
    const units = unitsOf(name);
    const dependents = Object.fromEntries(orders.startOrder.filter((n) => !units.includes(n)).map((n) => [n, idOf(n)]));
    return {
      component: name,
      ...instanceFields(name),
      ...membersOf(name, units),
      dependents,
      wait,
      timeout: timeout.text,
    };
  }

  async function stop(name: string, query: unknown) {
    const q = strictQuery(query, ['dry', 'timeout']);
    const dry = parseBool('dry', q.dry, false);
    const timeout = parseTimeout(q.timeout);
    const orders = ordersOf(name);
    // What a stop takes down: `name` after its hard dependents (a pure read; nothing is queued).
    if (dry) return { stopOrder: orders.stopOrder } satisfies ActionPlanView;
    const outcome = await waitFor(engine.stop(name), timeout.ms, undefined);
    const failure = unfinished(outcome, `stop of ${name}`, orders.stopOrder, timeout.text, 'KS_STOP_FAILED');
    if (failure) throw failure;
    const stopOrder = outcome.kind === 'done' ? outcome.result.stopOrder : orders.stopOrder;
    // Its hard dependents went first (a dependency never stops under a running dependent); all stay held stopped.
    const units = unitsOf(name);
    return { component: name, stopOrder, stoppedDependents: stopOrder.filter((n) => !units.includes(n)), held: true };
  }

  async function start(name: string, query: unknown, reply: ApiReply) {
    const q = strictQuery(query, ['dry', 'wait', 'timeout']);
    const dry = parseBool('dry', q.dry, false);
    const wait: WaitFor = parseWait(q.wait);
    const timeout = parseTimeout(q.timeout);
    ordersOf(name);
    // What a start would bring up now (its own units not running, dependencies that are down) and wait for.
    if (dry)
      return (engine.startOrders?.(name) ?? { startOrder: unitsOf(name), waitingFor: [] }) satisfies ActionPlanView;
    const units = unitsOf(name);
    const starts = wait === 'started' ? ctx.waits.starts(units) : undefined;
    const op = engine.start(name, timeout.ms);
    if (wait === 'none') {
      detached(op, name, 'start');
      return reply.code(202).send({ component: name, wait });
    }
    const outcome = await waitFor(op, timeout.ms, starts);
    const failure = unfinished(outcome, `start of ${name}`, units, timeout.text, 'KS_START_FAILED');
    if (failure) throw failure;
    // Empty when it was running already: a start never restarts anything.
    const started = outcome.kind === 'done' ? outcome.result.startOrder : units;
    return {
      component: name,
      ...instanceFields(name),
      ...membersOf(name, units),
      started,
      wait,
      timeout: timeout.text,
    };
  }

  server.post('/v1/components/*', async (request, reply) => {
    const { name, action } = parseComponentTarget(request.params['*']);
    if (!action)
      throw new ApiError(404, 'KS_NOT_FOUND', `POST /v1/components/${name} needs an action: :restart, :stop or :start`);
    requireEmptyBody(request.body);
    ctx.log?.info(
      {
        component: name,
        action,
        query: request.query,
        via: isSocketRequest(request.raw) ? 'socket' : 'tcp',
        revision: store.appliedRevision()?.id ?? null,
      },
      'operator action requested through the API',
    );
    if (action === 'restart') return restart(name, request.query, reply);
    if (action === 'stop') return stop(name, request.query);
    return start(name, request.query, reply);
  });
}
