// What restarting one component touches (SPEC §4, §10): itself and its transitive hard dependents; ordering dependents never.
import type { DesiredState } from './desired-state.js';

export interface RestartOrders {
  stopOrder: string[];
  startOrder: string[];
}

/** The hard dependents of `name`, transitively, in start order (not including `name`). */
export function hardDependents(desired: DesiredState, name: string): string[] {
  const byName = new Map(desired.components.map((c) => [c.name, c]));
  const reached = new Set([name]);
  const out: string[] = [];
  // Start order lists every dependency before its dependents, so one pass reaches the whole closure.
  for (const n of desired.startOrder) {
    if (n === name) continue;
    if (byName.get(n)!.dependencies.some((d) => d.type === 'hard' && reached.has(d.component))) {
      reached.add(n);
      out.push(n);
    }
  }
  return out;
}

/** `influxdb` in the worked example → stop [web api influxdb], start [influxdb api web]. */
export function restartCascade(desired: DesiredState, name: string): RestartOrders {
  const startOrder = desired.startOrder.filter((n) => n === name || hardDependents(desired, name).includes(n));
  return { stopOrder: [...startOrder].reverse(), startOrder };
}
