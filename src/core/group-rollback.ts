// A composite is updated as one unit (SPEC §12): when a new member never gets healthy, the previous members come back.
import type { DesiredComponent, DesiredState } from './desired-state.js';
import { computeLayers } from './graph.js';

/**
 * `state` with the units of group `group` replaced by `previous` (the units it had before), layers and start order
 * recomputed. Dependencies on units that no longer exist are dropped: they were the new members being undone.
 */
export function withGroupReplaced(
  state: DesiredState,
  group: string,
  previous: readonly DesiredComponent[],
): DesiredState {
  const kept = state.components.filter((c) => c.group !== group);
  const firstIndex = state.components.findIndex((c) => c.group === group);
  const at =
    firstIndex < 0 ? kept.length : state.components.slice(0, firstIndex).filter((c) => c.group !== group).length;
  const merged = [...kept.slice(0, at), ...previous, ...kept.slice(at)];
  const names = new Set(merged.map((c) => c.name));
  const components = merged.map((c) =>
    c.dependencies.every((d) => names.has(d.component))
      ? c
      : { ...c, dependencies: c.dependencies.filter((d) => names.has(d.component)) },
  );
  const index = new Map(components.map((c, i) => [c.name, i]));
  const deps = components.map((c) =>
    c.dependencies.flatMap((d) => (index.has(d.component) ? [index.get(d.component)!] : [])),
  );
  const layers = computeLayers(deps).map((l) => l.map((i) => components[i]!.name));
  const groups = state.groups?.map((g) =>
    g.name === group ? { ...g, members: layers.flat().filter((n) => previous.some((p) => p.name === n)) } : g,
  );
  return { ...state, components, layers, startOrder: layers.flat(), ...(groups && { groups }) };
}

/** `state` with each unit of `replacements` in place of the unit of the same name, layers and start order recomputed. */
export function withUnitsReplaced(state: DesiredState, replacements: readonly DesiredComponent[]): DesiredState {
  if (replacements.length === 0) return state;
  const byName = new Map(replacements.map((c) => [c.name, c]));
  const components = state.components.map((c) => byName.get(c.name) ?? c);
  const names = new Set(components.map((c) => c.name));
  const index = new Map(components.map((c, i) => [c.name, i]));
  const deps = components.map((c) =>
    c.dependencies.flatMap((d) => (names.has(d.component) ? [index.get(d.component)!] : [])),
  );
  const layers = computeLayers(deps).map((l) => l.map((i) => components[i]!.name));
  return { ...state, components, layers, startOrder: layers.flat() };
}

/**
 * `state` with groups `groups` back at their `previous` members, and every other unit that binds one of their exports
 * (`{{deps.GROUP.exports.…}}`) back at its previous spec too, so it runs with the values of the members restored.
 */
export function withGroupsRestored(
  state: DesiredState,
  groups: readonly string[],
  previous: readonly DesiredComponent[],
): DesiredState {
  let s = state;
  for (const g of groups)
    s = withGroupReplaced(
      s,
      g,
      previous.filter((c) => c.group === g),
    );
  const before = new Map(previous.map((c) => [c.name, c]));
  const binders = s.components.filter(
    (c) =>
      (c.group === undefined || !groups.includes(c.group)) &&
      before.has(c.name) &&
      Object.keys(c.inputs ?? {}).some((k) => groups.some((g) => k.startsWith(`deps.${g}.`))),
  );
  return withUnitsReplaced(
    s,
    binders.map((c) => before.get(c.name)!),
  );
}

/** Units whose spec a composite's rollback may need: members and replicas, and units that bind another's exports. */
export function rollbackRelevant(c: DesiredComponent): boolean {
  return c.group !== undefined || Object.keys(c.inputs ?? {}).some((k) => k.startsWith('deps.'));
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
