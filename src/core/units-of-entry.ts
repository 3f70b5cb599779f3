// A plan entry's units, the things that run: the entry itself, one per service, or one per member of a composite
// (replicas are expanded later). Each carries its merged configuration, its exports and its dependencies.
import semver from 'semver';
import { CODES, type Diagnostic } from './errors.js';
import { mergeConfig, table } from './merge-config.js';
import { recipePathOf, type PlanEntry } from './plan.js';
import type { ParsedRecipe, RunSpec } from './recipe.js';
import { exportsOf } from './resolve-placeholders.js';
import type { At, OverrideLayer, Unit } from './resolution-types.js';
import type { DependencyType } from './desired-state-types.js';

const SERVICE_ONLY_KEYS = ['requires', 'after', 'exports'] as const;

/** The name a recipe provides (its metadata.name), even from a recipe with errors of its own; undefined when unknown. */
export function recipeName(r: ParsedRecipe | undefined): string | undefined {
  const raw = (r?.doc?.raw as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
  return r?.recipe?.metadata.name ?? (typeof raw === 'string' ? raw : undefined);
}

export function unitsOfEntry(
  entry: PlanEntry,
  i: number,
  r: ParsedRecipe,
  recipes: ReadonlyMap<string, ParsedRecipe>,
  diagnostics: Diagnostic[],
  at: At,
  layers: OverrideLayer[],
): Unit[] {
  const recipe = r.recipe!;
  const external = (p: ParsedRecipe) =>
    p.recipe!.dependencies.map((dep, d) => ({ dep, at: { parsed: p, path: ['dependencies', d, 'name'] } }));

  if (recipe.members) {
    const memberRecipes = recipe.members.map((m, k) => {
      const p = recipes.get(recipePathOf({ name: m.name, recipe: m.recipe }));
      const loc = { parsed: r, path: ['members', k, 'recipe'] };
      if (!p) {
        diagnostics.push(at(loc, CODES.FILE_NOT_FOUND, `member recipe ${m.recipe} was not loaded`));
        return undefined;
      }
      if (!p.recipe) return undefined; // its own errors are reported
      if (!p.recipe.lifecycle?.run) {
        diagnostics.push(
          at(
            loc,
            CODES.COMPOSITE_NESTED,
            `member ${m.name} (${m.recipe}) is ${p.recipe.members ? 'a composite' : 'several services'}: a composite's members each run one program`,
            'list its parts as members of this composite instead',
          ),
        );
        return undefined;
      }
      return p;
    });
    for (const layer of layers)
      for (const key of Object.keys(layer.config))
        if (recipe.members.some((m) => m.name === key) && !table(layer.config[key]))
          diagnostics.push(
            at(
              layer.loc([...layer.path, key]),
              CODES.INVALID_TYPE,
              `[${layer.label}.${key}] must be a table: a composite's configuration has one section per member`,
            ),
          );
        else if (!recipe.members.some((m) => m.name === key))
          diagnostics.push(
            at(
              layer.loc([...layer.path, key]),
              CODES.MEMBER_UNKNOWN,
              `[${layer.label}.${key}] names no member of ${entry.name}`,
              `members: ${recipe.members.map((m) => m.name).join(', ')}`,
            ),
          );
    const units: Unit[] = [];
    const indexOfMember = new Map<number, number>();
    recipe.members.forEach((m, k) => {
      const p = memberRecipes[k];
      if (!p) return;
      const member = p.recipe!;
      let config = mergeConfig(
        member.config ?? {},
        table(recipe.config?.[m.name]),
        { parsed: r, path: ['config', m.name] },
        p.file,
        diagnostics,
        at,
      );
      for (const layer of layers)
        config = mergeConfig(
          config,
          table(layer.config[m.name]),
          layer.loc([...layer.path, m.name]),
          p.file,
          diagnostics,
          at,
        );
      indexOfMember.set(k, units.length);
      units.push({
        entryIndex: i,
        name: `${entry.name}/${m.name}`,
        member: m.name,
        parsed: p,
        recipe: member,
        runPath: ['lifecycle', 'run'],
        run: member.lifecycle!.run!,
        config,
        exports: new Map(),
        siblings: [],
        external: [],
        brokenSiblings: [],
      });
    });
    // A member's dependency on a sibling's recipe is an edge inside the composite; the rest, and the composite's own, go to the plan.
    recipe.members.forEach((_m, k) => {
      const ui = indexOfMember.get(k);
      if (ui === undefined) return;
      const u = units[ui]!;
      u.external.push(...external(r));
      for (const e of external(u.parsed)) {
        // A sibling is found by its recipe's name even when that recipe has errors of its own (reported there).
        const sibling = recipe.members!.findIndex(
          (_s, s) =>
            s !== k && recipeName(recipes.get(recipePathOf({ name: _s.name, recipe: _s.recipe }))) === e.dep.name,
        );
        const si = sibling < 0 ? undefined : indexOfMember.get(sibling);
        if (sibling >= 0 && si === undefined) u.brokenSiblings.push(recipe.members![sibling]!.name);
        else if (si === undefined) u.external.push(e);
        else {
          const provided = units[si]!.recipe.metadata.version;
          if (e.dep.version !== undefined && !semver.satisfies(provided, e.dep.version, { includePrerelease: true }))
            diagnostics.push(
              at(
                { ...e.at, path: [...e.at.path.slice(0, -1), 'version'] },
                CODES.DEP_VERSION_MISMATCH,
                `member "${u.name}" needs ${e.dep.name} ${e.dep.version}, but "${units[si]!.name}" is ${provided}`,
              ),
            );
          u.siblings.push({ unit: si, type: e.dep.type, at: e.at });
        }
      }
      u.exports = exportsOf(u.parsed, ['exports'], u.parsed.recipe!.exports, u.config, u.name, diagnostics, at);
    });
    return units;
  }

  const config = layers.reduce(
    (c, layer) => mergeConfig(c, layer.config, layer.loc(layer.path), r.file, diagnostics, at),
    recipe.config ?? {},
  );
  const shared = exportsOf(r, ['exports'], recipe.exports, config, entry.name, diagnostics, at);
  const services = recipe.lifecycle?.services;
  if (services) {
    const names = Object.keys(services);
    return names.map((name) => {
      const svc = services[name]!;
      const run = Object.fromEntries(
        Object.entries(svc).filter(([k]) => !(SERVICE_ONLY_KEYS as readonly string[]).includes(k)),
      ) as RunSpec;
      const siblings = (['requires', 'after'] as const).flatMap((key) =>
        (svc[key] ?? []).flatMap((s, k) =>
          names.includes(s) && s !== name
            ? [
                {
                  unit: names.indexOf(s),
                  type: (key === 'requires' ? 'hard' : 'ordering') as DependencyType,
                  at: { parsed: r, path: ['lifecycle', 'services', name, key, k] },
                },
              ]
            : [],
        ),
      );
      const own = exportsOf(
        r,
        ['lifecycle', 'services', name, 'exports'],
        svc.exports,
        config,
        `${entry.name}/${name}`,
        diagnostics,
        at,
      );
      return {
        entryIndex: i,
        name: `${entry.name}/${name}`,
        member: name,
        parsed: r,
        recipe,
        runPath: ['lifecycle', 'services', name],
        run,
        config,
        exports: new Map([...shared, ...own]),
        siblings,
        external: external(r),
        brokenSiblings: [],
      };
    });
  }
  return [
    {
      entryIndex: i,
      name: entry.name,
      parsed: r,
      recipe,
      runPath: ['lifecycle', 'run'],
      run: recipe.lifecycle!.run!,
      config,
      exports: shared,
      siblings: [],
      external: external(r),
      brokenSiblings: [],
    },
  ];
}
