// What restarting one component touches (SPEC §4, §10): itself and its transitive hard dependents; ordering dependents never.
import type { DesiredState } from './desired-state.js';

export interface RestartOrders {
  stopOrder: string[];
  startOrder: string[];
}

/** The hard dependents of `names`, transitively, in start order (not including `names`). */
export function hardDependents(desired: DesiredState, names: string | readonly string[]): string[] {
  const byName = new Map(desired.components.map((c) => [c.name, c]));
  const own = new Set(typeof names === 'string' ? [names] : names);
  const reached = new Set(own);
  const out: string[] = [];
  // Start order lists every dependency before its dependents, so one pass reaches the whole closure.
  for (const n of desired.startOrder) {
    if (own.has(n)) continue;
    if (byName.get(n)!.dependencies.some((d) => d.type === 'hard' && reached.has(d.component))) {
      reached.add(n);
      out.push(n);
    }
  }
  return out;
}

/**
 * `influxdb` in the worked example → stop [web api influxdb], start [influxdb api web]. Several names (the members of
 * a composite) restart together, in their dependency order, with the hard dependents of any of them.
 */
export function restartCascade(desired: DesiredState, names: string | readonly string[]): RestartOrders {
  const own = new Set(typeof names === 'string' ? [names] : names);
  const dependents = new Set(hardDependents(desired, [...own]));
  const startOrder = desired.startOrder.filter((n) => own.has(n) || dependents.has(n));
  return { stopOrder: [...startOrder].reverse(), startOrder };
}

/**
 * The units `name` stands for in `desired`: itself, or every unit of a group (`app` → `app/web`, `app/jobs/1` …; a
 * group scaled to zero has none). Undefined when the revision has no such component.
 */
export function unitsOf(desired: DesiredState, name: string): string[] | undefined {
  const prefix = `${name}/`;
  const units = desired.startOrder.filter((n) => n === name || n.startsWith(prefix));
  if (units.length) return units;
  return desired.groups?.some((g) => g.name === name) ? [] : undefined;
}
