// An operator's restart, stop and start of a component (SPEC §10), and their dry runs (the API's `?dry=true`). The
// engine runs each action in its queue (engine.ts stays the one writer of what runs); what an action does is here,
// apart from the apply's numbered steps. The orders themselves are computed purely (operator-orders.ts).
import type { DesiredState } from '../core/desired-state.js';
import { restartCascade, unitsOf, type RestartOrders } from '../core/restart-cascade.js';
import type { Logger } from '../log/logger.js';
import type { StateStore } from '../store/state-store.js';
import type { ExecutionResult } from './executor.js';
import { startPlan } from './operator-orders.js';

/** What an operator action did: the orders of SPEC §10 and how the execution went. */
export interface OperatorResult extends RestartOrders {
  execution: ExecutionResult;
}

/** What an action reads of the engine when it runs, and how it carries out its orders. */
export interface OperatorContext {
  /** The applied revision's desired state, as it is when the action's turn in the queue comes. */
  desired: DesiredState | undefined;
  store: StateStore;
  log: Logger;
  now: () => number;
  executeOrders: (desired: DesiredState, stopOrder: string[], startOrder: string[]) => Promise<ExecutionResult>;
}

/** The orders an operator restart of `name` would carry out (the API's `?dry=true`); undefined for an unknown name. */
export function restartOrders(desired: DesiredState | undefined, name: string): RestartOrders | undefined {
  const units = desired && unitsOf(desired, name);
  return units && restartCascade(desired!, units);
}

/**
 * An operator restart: `name` and its transitive hard dependents, stopped dependents-first and
 * started once their dependencies are healthy. Clears a crash-loop hold (SPEC §5).
 */
export async function restartNow(name: string, x: OperatorContext): Promise<OperatorResult> {
  const { desired, units } = requireDesired(x.desired, name);
  const orders = restartCascade(desired, units);
  x.log.info(
    {
      component: name,
      stop_order: orders.stopOrder,
      start_order: orders.startOrder,
      revision: x.store.appliedRevision()?.id,
    },
    'restart requested',
  );
  const execution = await x.executeOrders(desired, orders.stopOrder, orders.startOrder);
  return { ...orders, execution };
}

/** Stops `name` after its hard dependents, and holds them all stopped until started again (or changed by a revision). */
export async function stopNow(name: string, x: OperatorContext): Promise<OperatorResult> {
  const { desired, units } = requireDesired(x.desired, name);
  const { stopOrder } = restartCascade(desired, units);
  const own = new Set(units);
  x.log.info({ component: name, stop_order: stopOrder, revision: x.store.appliedRevision()?.id }, 'stop requested');
  const execution = await x.executeOrders(desired, stopOrder, []);
  for (const n of stopOrder) {
    if (!x.store.component(n)) continue;
    x.store.recordHeld(n, true);
    x.store.recordState(
      n,
      'stopped',
      own.has(n) ? 'stopped by an operator' : `stopped by an operator with its hard dependency ${name}`,
    );
  }
  return { stopOrder, startOrder: [], execution };
}

/**
 * Starts `name` once its dependencies are healthy, releasing an operator's or a crash loop's hold. Dependencies
 * that are down (stopped, failed, crash-looping) are started first, in dependency order; ones that are on their
 * way up (a crash restart in progress) are waited for, up to `dependencyWaitMs`.
 */
export async function startNow(name: string, dependencyWaitMs: number, x: OperatorContext): Promise<OperatorResult> {
  const { store } = x;
  const { desired, startOrder, waitingFor: coming, running, up } = startPlanOf(name, x);
  x.log.info(
    { component: name, start_order: startOrder, waiting_for: coming, revision: x.store.appliedRevision()?.id },
    running ? 'start requested: already running' : 'start requested',
  );
  // A dependency in a crash restart belongs to its worker: wait for it rather than start it a second time.
  const deadline = x.now() + dependencyWaitMs;
  while (coming.some((n) => store.component(n)?.state !== 'running' && up(n)) && x.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  const execution = await x.executeOrders(desired, [], startOrder);
  return { stopOrder: [], startOrder, execution };
}

/** What an operator start of `name` would start now, and which dependencies on their way up it would wait for (`?dry=true`). */
export function startOrders(
  name: string,
  x: Pick<OperatorContext, 'desired' | 'store'>,
): { startOrder: string[]; waitingFor: string[] } | undefined {
  if (!x.desired || !unitsOf(x.desired, name)) return undefined;
  const { startOrder, waitingFor } = startPlanOf(name, x);
  return { startOrder, waitingFor };
}

/** The start of `name` as the store stands (operator-orders.ts). */
function startPlanOf(name: string, x: Pick<OperatorContext, 'desired' | 'store'>) {
  const { desired, units } = requireDesired(x.desired, name);
  return { desired, ...startPlan(desired, units, (n) => x.store.component(n)?.state) };
}

function requireDesired(desired: DesiredState | undefined, name: string): { desired: DesiredState; units: string[] } {
  const units = desired && unitsOf(desired, name);
  if (!desired || !units)
    throw Object.assign(new Error(`no component "${name}" in the applied revision`), {
      code: 'KS_COMPONENT_NOT_FOUND',
    });
  return { desired, units };
}
