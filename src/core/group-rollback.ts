// A composite is updated as one unit (SPEC §12): when a new member never gets healthy, the previous members come back.
import type { DesiredComponent, DesiredState } from './desired-state.js';
import { computeLayers } from './graph.js';

/**
 * `state` with the units of group `group` replaced by `previous` (the units it had before), layers and start order
 * recomputed. Dependencies on units that no longer exist are dropped: they were the new members being undone.
 */
export function withGroupReplaced(state: DesiredState, group: string, previous: readonly DesiredComponent[]): DesiredState {
  const kept = state.components.filter((c) => c.group !== group);
  const firstIndex = state.components.findIndex((c) => c.group === group);
  const at = firstIndex < 0 ? kept.length : state.components.slice(0, firstIndex).filter((c) => c.group !== group).length;
  const merged = [...kept.slice(0, at), ...previous, ...kept.slice(at)];
  const names = new Set(merged.map((c) => c.name));
  const components = merged.map((c) => (c.dependencies.every((d) => names.has(d.component)) ? c : { ...c, dependencies: c.dependencies.filter((d) => names.has(d.component)) }));
  const index = new Map(components.map((c, i) => [c.name, i]));
  const deps = components.map((c) => c.dependencies.flatMap((d) => (index.has(d.component) ? [index.get(d.component)!] : [])));
  const layers = computeLayers(deps).map((l) => l.map((i) => components[i]!.name));
  const groups = state.groups?.map((g) => (g.name === group ? { ...g, members: layers.flat().filter((n) => previous.some((p) => p.name === n)) } : g));
  return { ...state, components, layers, startOrder: layers.flat(), ...(groups && { groups }) };
}

/** Every unit that depends on one of `names`, directly or not, by any kind of edge (start order makes one pass enough). */
export function allDependents(state: DesiredState, names: Iterable<string>): Set<string> {
  const reached = new Set(names);
  const byName = new Map(state.components.map((c) => [c.name, c]));
  const out = new Set<string>();
  for (const n of state.startOrder) {
    if (reached.has(n)) continue;
    if (byName.get(n)!.dependencies.some((d) => reached.has(d.component))) {
      reached.add(n);
      out.add(n);
    }
  }
  return out;
}
