// Resolution: a parsed plan plus its parsed recipes become the desired state, or every reason they cannot.
//
// A plan entry becomes one or more *units*, the things that run: the entry itself (one [lifecycle.run]), one per
// service ([lifecycle.services.NAME] → `app/web`), one per member of a composite ([[members]] → `app/proxy`), and
// one per replica (`workers/2`). The engine, the store and the API see units; groups remember which belong together.
import { dedupeDiagnostics } from './dedupe-diagnostics.js';
import type { ConfigOverlay, DesiredComponent, DesiredGroup, GroupKind, Resolution } from './desired-state-types.js';
import { CODES, type Diagnostic } from './errors.js';
import { computeLayers, findCycles } from './graph.js';
import { componentHash } from './identity.js';
import { leafRecipe } from './leaf-recipe.js';
import { recipePathOf, type ParsedPlan, type PlanEntry } from './plan.js';
import type { ParsedRecipe } from './recipe.js';
import { resolveRun } from './resolve-placeholders.js';
import {
  where,
  type Aliases,
  type ExportValue,
  type Located,
  type OverrideLayer,
  type Unit,
} from './resolution-types.js';
import type { TomlPath } from './toml-locate.js';
import { unitsOfEntry } from './units-of-entry.js';
import { unitDependencies } from './unit-dependencies.js';

/**
 * Resolves dependency names (a recipe's `metadata.name`) to plan components, checks version ranges and cycles,
 * expands services, members and replicas into units, resolves configuration, exports and binds, and computes
 * layers. Reports every problem of the revision at once.
 */
export function resolveDesiredState(
  plan: ParsedPlan,
  recipes: ReadonlyMap<string, ParsedRecipe>,
  overlay?: ConfigOverlay,
): Resolution {
  const diagnostics: Diagnostic[] = [...plan.diagnostics];
  const seenFiles = new Set<string>();
  for (const r of recipes.values()) {
    if (seenFiles.has(r.file)) continue;
    seenFiles.add(r.file);
    diagnostics.push(...r.diagnostics);
  }
  if (!plan.plan) return { ok: false, diagnostics: dedupeDiagnostics(diagnostics) };

  const entries = plan.plan.components;
  const parsed = entries.map((e) => recipes.get(recipePathOf(e)));
  const unread = entries.flatMap((_e, i) => (parsed[i]?.recipe ? [] : [i]));
  if (unread.length && diagnostics.length === 0) {
    // The loader always reports why a recipe is missing; a caller that did not gets a diagnostic, never a silent failure.
    for (const i of unread)
      diagnostics.push(
        plan.doc.diagnostic(
          CODES.FILE_NOT_FOUND,
          ['components', i, 'recipe'],
          `recipe ${entries[i]!.recipe} was not loaded`,
        ),
      );
  }

  const at = (where: Located, code: Diagnostic['code'], message: string, hint?: string): Diagnostic => {
    const r = where.parsed;
    return r.doc
      ? r.doc.diagnostic(code, where.path, message, hint)
      : { code, message, file: r.file, path: where.path.join('.'), ...(hint && { hint }) };
  };
  const planAt = (path: TomlPath) => ({
    parsed: { file: plan.file, diagnostics: [], doc: plan.doc } as unknown as ParsedRecipe,
    path,
  });
  const overlayAt = (path: TomlPath) => ({
    parsed: { file: overlay!.file, diagnostics: [], doc: overlay!.doc } as unknown as ParsedRecipe,
    path,
  });
  const entryNames = new Set(entries.map((e) => e.name));
  for (const name of Object.keys(overlay?.config ?? {}))
    if (!entryNames.has(name))
      diagnostics.push(
        at(
          overlayAt([...overlay!.path, name]),
          CODES.FLEET_UNKNOWN_COMPONENT,
          `"${name}" is not a component of ${plan.file}`,
          entries.length
            ? `its components: ${entries.map((e) => e.name).join(', ')}`
            : `${plan.file} has no components`,
        ),
      );
  const layersOf = (entry: PlanEntry, i: number): OverrideLayer[] => {
    const own: OverrideLayer = {
      config: entry.config ?? {},
      path: ['components', i, 'config'],
      label: 'components.config',
      loc: planAt,
    };
    const over = overlay?.config[entry.name];
    return over
      ? [
          own,
          {
            config: over,
            path: [...overlay!.path, entry.name],
            label: `${overlay!.path.filter((p) => typeof p === 'string').join('.')}.${entry.name}`,
            loc: overlayAt,
          },
        ]
      : [own];
  };

  // 1. Units of every entry whose recipes parsed.
  const unitsOf: Unit[][] = entries.map((entry, i) => {
    const r = parsed[i];
    if (!r?.recipe) return [];
    return unitsOfEntry(entry, i, r, recipes, diagnostics, at, layersOf(entry, i));
  });

  // An entry whose recipe (or a member's) did not parse exports what nobody can know: binds to it are not checked.
  const complete = entries.map(
    (_e, i) =>
      !!parsed[i]?.recipe &&
      (parsed[i]!.recipe!.members ?? []).every(
        (m) => !!recipes.get(recipePathOf({ name: m.name, recipe: m.recipe }))?.recipe,
      ),
  );

  // 2. Exports: each unit's, and each entry's (the union of its units', which must not collide).
  const entryExports: Array<Map<string, ExportValue>> = unitsOf.map((units) => {
    const all = new Map<string, ExportValue>();
    for (const u of units)
      for (const [key, v] of u.exports) {
        const first = all.get(key);
        if (first && first !== v)
          diagnostics.push(
            at(
              v,
              CODES.EXPORT_COLLISION,
              `${v.owner} and ${first.owner} both export "${key}"`,
              `the other is ${where(first)}: a composite's exports are one key space`,
            ),
          );
        else all.set(key, v);
      }
    return all;
  });

  // 3. Dependencies, unit by unit: siblings by index, the rest against the plan.
  const unitDeps = unitDependencies(plan.file, entries, parsed, recipes, unitsOf, diagnostics, at);

  // 4. Placeholders: configuration and binds, resolved per unit; then the resolved health check is checked again.
  const resolvedRuns = unitsOf.map((units, i) =>
    units.map((u, k) => {
      const aliases: Aliases = new Map();
      const alias = (name: string, target: { exports: Map<string, ExportValue>; label: string; unknown?: boolean }) => {
        const seen = aliases.get(name);
        // A sibling member and a plan component of one name: a bind to it would be a guess, so it is refused.
        if (seen?.ambiguous || seen?.label === target.label) return;
        aliases.set(name, seen ? { exports: new Map(), label: name, ambiguous: [seen.label, target.label] } : target);
      };
      for (const d of unitDeps[i]![k]!) {
        if (d.unit !== undefined)
          alias(unitsOf[i]![d.unit]!.member!, {
            exports: unitsOf[i]![d.unit]!.exports,
            label: unitsOf[i]![d.unit]!.name,
          });
        else
          alias(entries[d.entry]!.name, {
            exports: entryExports[d.entry]!,
            label: entries[d.entry]!.name,
            ...(!complete[d.entry] && { unknown: true }),
          });
      }
      for (const s of u.brokenSiblings)
        aliases.set(s, {
          exports: new Map(),
          label: `${u.name.slice(0, u.name.lastIndexOf('/'))}/${s}`,
          unknown: true,
        });
      return resolveRun(u, aliases, diagnostics, at);
    }),
  );

  // 5. Units become components, one per replica; edges to a unit reach every replica of it.
  const components: DesiredComponent[] = [];
  const leafIndices: number[][][] = unitsOf.map((units) => units.map(() => []));
  unitsOf.forEach((units, i) =>
    units.forEach((u, k) => {
      const { run, inputs, secrets } = resolvedRuns[i]![k]!;
      const { replicas, ...single } = run;
      const names =
        replicas === undefined ? [u.name] : Array.from({ length: replicas }, (_x, n) => `${u.name}/${n + 1}`);
      for (const name of names) {
        const recipe = leafRecipe(u.recipe, replicas === undefined ? run : single, resolvedRuns[i]![k]!.script);
        const entry = { name, recipe: recipePathOf({ name, recipe: u.parsed.file }) };
        leafIndices[i]![k]!.push(components.length);
        const grouped = name !== entries[i]!.name;
        components.push({
          name,
          index: i,
          recipePath: entry.recipe,
          runPath: u.runPath.join('.'),
          entry,
          recipe,
          dependencies: [],
          hash: componentHash({ recipe, entry }),
          ...(grouped && { group: entries[i]!.name, member: name.slice(entries[i]!.name.length + 1) }),
          ...(inputs && { inputs }),
          ...(secrets && { secrets }),
        });
      }
    }),
  );
  const deps: number[][] = components.map(() => []);
  /** Where each edge is declared: edgeOrigin[from][k] for the edge deps[from][k]. */
  const edgeOrigin: Located[][] = components.map(() => []);
  unitsOf.forEach((units, i) =>
    units.forEach((_u, k) => {
      for (const d of unitDeps[i]![k]!) {
        const targets = d.unit !== undefined ? leafIndices[i]![d.unit]! : leafIndices[d.entry]!.flat();
        for (const from of leafIndices[i]![k]!)
          for (const to of targets) {
            if (deps[from]!.includes(to)) continue;
            deps[from]!.push(to);
            components[from]!.dependencies.push({ component: components[to]!.name, type: d.type });
            edgeOrigin[from]!.push(d.at);
          }
      }
    }),
  );

  for (const cycle of findCycles(deps)) {
    const names = cycle.map((n) => components[n]!.name);
    const origin = edgeOrigin[cycle[0]!]![deps[cycle[0]!]!.indexOf(cycle[1 % cycle.length]!)];
    const message = `dependency cycle: ${[...names, names[0]].join(' → ')}`;
    const hint = 'break the cycle, or make one edge "ordering" in the other direction';
    const edge =
      origin && origin.path[origin.path.length - 1] === 'name' ? { ...origin, path: origin.path.slice(0, -1) } : origin;
    diagnostics.push(
      edge
        ? at(edge, CODES.DEP_CYCLE, message, hint)
        : { code: CODES.DEP_CYCLE, message, hint, file: plan.file, path: '' },
    );
  }
  if (diagnostics.length) return { ok: false, diagnostics: dedupeDiagnostics(diagnostics) };

  const layers = computeLayers(deps).map((layer) => layer.map((n) => components[n]!.name));
  const startOrder = layers.flat();
  const rank = new Map(startOrder.map((n, r) => [n, r]));
  const groups: DesiredGroup[] = [];
  unitsOf.forEach((units, i) => {
    const recipe = parsed[i]!.recipe!;
    const kind: GroupKind | undefined = recipe.members
      ? 'composite'
      : recipe.lifecycle?.services
        ? 'services'
        : recipe.lifecycle?.run?.replicas !== undefined
          ? 'replicas'
          : undefined;
    if (!kind) return;
    const members = leafIndices[i]!.flat()
      .map((n) => components[n]!.name)
      .sort((a, b) => rank.get(a)! - rank.get(b)!);
    groups.push({
      name: entries[i]!.name,
      kind,
      version: recipe.metadata.version,
      recipePath: recipePathOf(entries[i]!),
      members,
      index: i,
    });
  });
  return { ok: true, state: { planFile: plan.file, components, layers, startOrder, ...(groups.length && { groups }) } };
}
