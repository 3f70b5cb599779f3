// The cascade after a crash restart is healthy again: its hard dependents restarted. The engine runs it in its queue
// (engine.ts stays the one writer of what runs, through the context's executeOrders); what it does is here.
import type { OperatorContext } from './operator-actions.js';
import { hardDependents } from './operator-orders.js';

/** After a crash restart is healthy again, restart its hard dependents (transitively); ordering dependents stay. */
export async function cascadeAfterRecovery(name: string, x: OperatorContext): Promise<void> {
  const desired = x.desired;
  if (!desired) return;
  const startOrder = hardDependents(desired, name);
  if (startOrder.length === 0) return;
  x.log.info(
    {
      component: name,
      stop_order: [...startOrder].reverse(),
      start_order: startOrder,
      revision: x.store.appliedRevision()?.id,
    },
    'hard dependency restarted: restarting its hard dependents',
  );
  await x.executeOrders(desired, [...startOrder].reverse(), startOrder);
}
