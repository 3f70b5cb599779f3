// Resolution: a parsed plan plus its parsed recipes become the desired state, or every reason they cannot.
import semver from 'semver';
import { CODES, sortDiagnostics, type Diagnostic } from './errors.js';
import { computeLayers, findCycles } from './graph.js';
import { componentHash } from './identity.js';
import { recipePathOf, type ParsedPlan, type PlanEntry } from './plan.js';
import type { ParsedRecipe, Recipe } from './recipe.js';

export type DependencyType = 'hard' | 'ordering';

export interface ResolvedDependency {
  /** The plan component that provides the dependency. */
  component: string;
  type: DependencyType;
}

export interface DesiredComponent {
  name: string;
  /** Position in the plan: the tie-break within a layer. */
  index: number;
  recipePath: string;
  entry: PlanEntry;
  recipe: Recipe;
  dependencies: ResolvedDependency[];
  hash: string;
}

export interface DesiredState {
  planFile: string;
  /** In plan order. */
  components: DesiredComponent[];
  layers: string[][];
  startOrder: string[];
}

export type Resolution = { ok: true; state: DesiredState } | { ok: false; diagnostics: Diagnostic[] };

/**
 * Resolves dependency names (a recipe's `metadata.name`) to plan components, checks version ranges
 * and cycles, and computes layers. Reports every problem of the revision at once.
 */
export function resolveDesiredState(plan: ParsedPlan, recipes: ReadonlyMap<string, ParsedRecipe>): Resolution {
  const diagnostics: Diagnostic[] = [...plan.diagnostics];
  const seenFiles = new Set<string>();
  for (const r of recipes.values()) {
    if (seenFiles.has(r.file)) continue;
    seenFiles.add(r.file);
    diagnostics.push(...r.diagnostics);
  }
  if (!plan.plan) return { ok: false, diagnostics: dedupe(diagnostics) };

  const entries = plan.plan.components;
  const parsed = entries.map((e) => recipes.get(recipePathOf(e)));
  const unread = entries.filter((_e, i) => !parsed[i]?.recipe);
  if (unread.length && diagnostics.length === 0) {
    // The loader always reports why a recipe is missing; a caller that did not gets a diagnostic, never a silent failure.
    for (const e of unread) diagnostics.push(plan.doc.diagnostic(CODES.FILE_NOT_FOUND, ['components', entries.indexOf(e), 'recipe'], `recipe ${e.recipe} was not loaded`));
  }

  // Dependencies are still checked between the recipes that parsed, so one run reports every error of a
  // revision. A recipe that failed still provides its raw metadata.name, so it causes no false "missing".
  const providers = new Map<string, number[]>();
  // A recipe that could not be read or named at all might provide anything: then "missing" is not reported.
  let unknownProvider = false;
  parsed.forEach((r, i) => {
    const raw = (r?.doc?.raw as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
    const name = r?.recipe?.metadata.name ?? (typeof raw === 'string' ? raw : undefined);
    if (name === undefined) {
      unknownProvider = true;
      return;
    }
    const list = providers.get(name) ?? [];
    list.push(i);
    providers.set(name, list);
  });

  const deps: number[][] = entries.map(() => []);
  const resolved: ResolvedDependency[][] = entries.map(() => []);
  const at = (i: number, path: (string | number)[], code: Diagnostic['code'], message: string, hint?: string) => {
    const r = parsed[i]!;
    return r.doc ? r.doc.diagnostic(code, path, message, hint) : { code, message, file: r.file, path: path.join('.'), ...(hint && { hint }) };
  };
  entries.forEach((entry, i) => {
    const recipe = parsed[i]?.recipe;
    if (!recipe) return;
    recipe.dependencies.forEach((dep, d) => {
      const found = providers.get(dep.name) ?? [];
      if (found.length === 0 && unknownProvider) return;
      if (found.length === 0) {
        diagnostics.push(
          at(i, ['dependencies', d, 'name'], CODES.DEP_MISSING, `component "${entry.name}" depends on ${dep.name}, which no component of ${plan.file} provides`, 'add a component with that recipe to the plan, or remove the dependency'),
        );
        return;
      }
      if (found.length > 1) {
        diagnostics.push(
          at(i, ['dependencies', d, 'name'], CODES.DEP_AMBIGUOUS, `component "${entry.name}" depends on ${dep.name}, which several components provide: ${found.map((j) => entries[j]!.name).join(', ')}`),
        );
        return;
      }
      const j = found[0]!;
      const providerRecipe = parsed[j]!.recipe;
      if (!providerRecipe) return; // its own errors are reported; its version cannot be checked
      const provided = providerRecipe.metadata.version;
      if (dep.version !== undefined && !semver.satisfies(provided, dep.version, { includePrerelease: true })) {
        diagnostics.push(
          at(i, ['dependencies', d, 'version'], CODES.DEP_VERSION_MISMATCH, `component "${entry.name}" needs ${dep.name} ${dep.version}, but "${entries[j]!.name}" is ${provided}`),
        );
      }
      deps[i]!.push(j);
      resolved[i]!.push({ component: entries[j]!.name, type: dep.type });
    });
  });

  for (const cycle of findCycles(deps)) {
    const names = cycle.map((i) => entries[i]!.name);
    const first = cycle[0]!;
    const next = cycle[1 % cycle.length]!;
    const depIndex = parsed[first]!.recipe!.dependencies.findIndex((d) => d.name === parsed[next]!.recipe!.metadata.name);
    diagnostics.push(
      at(first, ['dependencies', Math.max(depIndex, 0)], CODES.DEP_CYCLE, `dependency cycle: ${[...names, names[0]].join(' → ')}`, 'break the cycle, or make one edge "ordering" in the other direction'),
    );
  }
  if (diagnostics.length) return { ok: false, diagnostics: dedupe(diagnostics) };

  const components: DesiredComponent[] = entries.map((entry, i) => ({
    name: entry.name,
    index: i,
    recipePath: recipePathOf(entry),
    entry,
    recipe: parsed[i]!.recipe!,
    dependencies: resolved[i]!,
    hash: componentHash({ recipe: parsed[i]!.recipe!, entry }),
  }));
  const layers = computeLayers(deps).map((layer) => layer.map((i) => entries[i]!.name));
  return { ok: true, state: { planFile: plan.file, components, layers, startOrder: layers.flat() } };
}

function dedupe(diags: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return sortDiagnostics(diags).filter((d) => {
    const key = `${d.file}\0${d.line}\0${d.path}\0${d.code}\0${d.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
