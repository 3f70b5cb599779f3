// Resolution's step 3 (resolve-desired-state.ts): each unit's dependencies, its siblings by index and the rest found
// in the plan by recipe name with their version ranges checked. Apart because it is the largest step, with its own
// lookups (who provides a name, which composite a member belongs to).
import semver from 'semver';
import type { DependencyType } from './desired-state-types.js';
import { CODES, type Diagnostic } from './errors.js';
import { recipePathOf, type PlanEntry } from './plan.js';
import type { ParsedRecipe } from './recipe.js';
import type { At, Located, Unit } from './resolution-types.js';
import { recipeName } from './units-of-entry.js';

/** One dependency of a unit: a sibling unit of its entry (`unit`), or a whole plan entry. */
export interface UnitDependency {
  entry: number;
  unit?: number;
  type: DependencyType;
  at: Located;
}

/** The dependencies of every unit (`[entry][unit]`); each problem found is pushed to `diagnostics`. */
export function unitDependencies(
  planFile: string,
  entries: readonly PlanEntry[],
  parsed: ReadonlyArray<ParsedRecipe | undefined>,
  recipes: ReadonlyMap<string, ParsedRecipe>,
  unitsOf: Unit[][],
  diagnostics: Diagnostic[],
  at: At,
): UnitDependency[][][] {
  // A revision repeats a few (version, range) pairs thousands of times: each is judged once.
  const verdicts = new Map<string, boolean>();
  const satisfies = (version: string, range: string): boolean => {
    const key = `${version}\0${range}`;
    let ok = verdicts.get(key);
    if (ok === undefined) verdicts.set(key, (ok = semver.satisfies(version, range, { includePrerelease: true })));
    return ok;
  };

  // Dependencies are still checked between the recipes that parsed, so one run reports every error of a
  // revision. A recipe that failed still provides its raw metadata.name, so it causes no false "missing".
  const providers = new Map<string, number[]>();
  // A recipe that could not be read or named at all might provide anything: then "missing" is not reported.
  let unknownProvider = false;
  parsed.forEach((r, i) => {
    const name = recipeName(r);
    if (name === undefined) {
      unknownProvider = true;
      return;
    }
    const list = providers.get(name) ?? [];
    list.push(i);
    providers.set(name, list);
  });

  // A member's recipe provides nothing to the plan; a dependency on it is pointed at its composite.
  const memberOf = new Map<string, { composite: string; name: string }>();
  parsed.forEach((r, i) => {
    for (const m of r?.recipe?.members ?? []) {
      const name = recipeName(recipes.get(recipePathOf({ name: m.name, recipe: m.recipe })));
      if (name !== undefined && !memberOf.has(name))
        memberOf.set(name, { composite: entries[i]!.name, name: r!.recipe!.metadata.name });
    }
  });

  return unitsOf.map((units, i) =>
    units.map((u) => {
      const out: UnitDependency[] = u.siblings.map((s) => ({
        entry: i,
        unit: s.unit,
        type: s.type,
        at: s.at,
      }));
      for (const { dep, at: loc } of u.external) {
        // A dependency of the entry's own recipe is the whole group's: name the group, so the units' reports are one.
        const who = loc.parsed === parsed[i] ? entries[i]!.name : u.name;
        const found = providers.get(dep.name) ?? [];
        if (found.length === 0 && unknownProvider) continue;
        if (found.length === 0) {
          const within = memberOf.get(dep.name);
          diagnostics.push(
            at(
              loc,
              CODES.DEP_MISSING,
              `component "${who}" depends on ${dep.name}, which no component of ${planFile} provides`,
              within
                ? `${dep.name} is a member of composite "${within.composite}": depend on the composite (${within.name})`
                : 'add a component with that recipe to the plan, or remove the dependency',
            ),
          );
          continue;
        }
        if (found.length > 1) {
          diagnostics.push(
            at(
              loc,
              CODES.DEP_AMBIGUOUS,
              `component "${who}" depends on ${dep.name}, which several components provide: ${found.map((j) => entries[j]!.name).join(', ')}`,
            ),
          );
          continue;
        }
        const j = found[0]!;
        const providerRecipe = parsed[j]!.recipe;
        // Its own errors are reported; its version cannot be checked, but it is still a dependency (binds to it are not
        // reported as binds to a stranger).
        const provided = providerRecipe?.metadata.version;
        if (provided !== undefined && dep.version !== undefined && !satisfies(provided, dep.version)) {
          diagnostics.push(
            at(
              { ...loc, path: [...loc.path.slice(0, -1), 'version'] },
              CODES.DEP_VERSION_MISMATCH,
              `component "${who}" needs ${dep.name} ${dep.version}, but "${entries[j]!.name}" is ${provided}`,
            ),
          );
        }
        out.push({ entry: j, type: dep.type, at: loc });
      }
      return out;
    }),
  );
}
