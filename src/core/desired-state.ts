// Resolution: a parsed plan plus its parsed recipes become the desired state, or every reason they cannot.
//
// A plan entry becomes one or more *units*, the things that run: the entry itself (one [lifecycle.run]), one per
// service ([lifecycle.services.NAME] → `app/web`), one per member of a composite ([[members]] → `app/proxy`), and
// one per replica (`workers/2`). The engine, the store and the API see units; groups remember which belong together.
import semver from 'semver';
import { CODES, sortDiagnostics, type Diagnostic } from './errors.js';
import { computeLayers, findCycles } from './graph.js';
import { componentHash } from './identity.js';
import { recipePathOf, type ParsedPlan, type PlanEntry } from './plan.js';
import { healthCheckRule, type ConfigTable, type ParsedRecipe, type Recipe, type RecipeDependency, type RecipeFile, type RunSpec } from './recipe.js';
import { hasPlaceholder, mapStrings, parseTemplate, placeholderContext, substitute } from './template.js';
import type { TomlPath } from './toml-locate.js';

export type DependencyType = 'hard' | 'ordering';

export interface ResolvedDependency {
  /** The unit that provides the dependency. */
  component: string;
  type: DependencyType;
}

export interface DesiredComponent {
  /** The unit's name: the plan name (`api`), or `group/member` (`app/web`, `workers/2`, `app/jobs/2`). */
  name: string;
  /** Position of its plan entry: the tie-break within a layer. */
  index: number;
  /** The recipe file it runs from (a composite member's own recipe). */
  recipePath: string;
  /** Where its run is in that file (`lifecycle.run`, `lifecycle.services.web`): diagnostics name fields under it. */
  runPath?: string;
  /** The hash input: the unit's name and recipe path (a plan entry's configuration enters resolved, through `recipe`). */
  entry: PlanEntry;
  /** What this unit runs: one resolved run, placeholders replaced. */
  recipe: Recipe;
  dependencies: ResolvedDependency[];
  hash: string;
  /** The plan component it belongs to, when it is a service, a member or a replica of one. */
  group?: string;
  /** Its name inside the group: `web`, `jobs/2`, `3`. */
  member?: string;
  /** The values its placeholders resolved to (`config.http.port` → `8080`), to say which one changed. */
  inputs?: Record<string, string>;
}

export type GroupKind = 'services' | 'composite' | 'replicas';

/** A plan component made of several units (or of none: `replicas = 0`). */
export interface DesiredGroup {
  name: string;
  kind: GroupKind;
  version: string;
  recipePath: string;
  /** Unit names, in start order. */
  members: string[];
  index: number;
}

export interface DesiredState {
  planFile: string;
  /** In plan order. */
  components: DesiredComponent[];
  layers: string[][];
  startOrder: string[];
  /** Plan components that run as several units; absent or empty when none does. */
  groups?: DesiredGroup[];
}

export type Resolution = { ok: true; state: DesiredState } | { ok: false; diagnostics: Diagnostic[] };

interface Located {
  parsed: ParsedRecipe;
  path: TomlPath;
}

interface ExportValue extends Located {
  value: string;
  /** The unit (or group) that exports it, for messages. */
  owner: string;
}

/** One runnable thing before replicas are expanded. */
interface Unit {
  entryIndex: number;
  name: string;
  member?: string;
  parsed: ParsedRecipe;
  recipe: RecipeFile;
  runPath: TomlPath;
  run: RunSpec;
  config: ConfigTable;
  exports: Map<string, ExportValue>;
  /** Siblings it needs, by unit index within its entry. */
  siblings: Array<{ unit: number; type: DependencyType; at: Located }>;
  /** Dependencies by recipe name, resolved against the plan. */
  external: Array<{ dep: RecipeDependency; at: Located }>;
  /** Sibling members it depends on whose recipes did not parse: named, but with nothing known about them. */
  brokenSiblings: string[];
}

type Aliases = Map<string, { exports: Map<string, ExportValue>; label: string; unknown?: boolean; ambiguous?: [string, string] }>;

const SERVICE_ONLY_KEYS = ['requires', 'after', 'exports'] as const;
const RUN_ENUMS = new Set(['type', 'restart_policy', 'update_strategy', 'runtime', 'pull_policy']);

/**
 * Resolves dependency names (a recipe's `metadata.name`) to plan components, checks version ranges and cycles,
 * expands services, members and replicas into units, resolves configuration, exports and binds, and computes
 * layers. Reports every problem of the revision at once.
 */
/**
 * Configuration laid over a plan's own, from another file: a fleet target's `config` (SPEC §13), per component.
 * Its problems are reported in that file, at `path` (e.g. `targets[1].config`).
 */
export interface ConfigOverlay {
  file: string;
  doc: { diagnostic: (code: Diagnostic['code'], path: TomlPath, message: string, hint?: string) => Diagnostic };
  path: TomlPath;
  config: Readonly<Record<string, ConfigTable>>;
}

/** One layer of configuration overrides on a plan entry: where it is written, and what it sets. */
interface OverrideLayer {
  config: ConfigTable;
  path: TomlPath;
  /** How messages name it: `components.config`, `targets.config.api`. */
  label: string;
  loc: (path: TomlPath) => Located;
}

export function resolveDesiredState(plan: ParsedPlan, recipes: ReadonlyMap<string, ParsedRecipe>, overlay?: ConfigOverlay): Resolution {
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
    const name = recipeName(r);
    if (name === undefined) {
      unknownProvider = true;
      return;
    }
    const list = providers.get(name) ?? [];
    list.push(i);
    providers.set(name, list);
  });

  const at = (where: Located, code: Diagnostic['code'], message: string, hint?: string): Diagnostic => {
    const r = where.parsed;
    return r.doc ? r.doc.diagnostic(code, where.path, message, hint) : { code, message, file: r.file, path: where.path.join('.'), ...(hint && { hint }) };
  };
  const planAt = (path: TomlPath) => ({ parsed: { file: plan.file, diagnostics: [], doc: plan.doc } as unknown as ParsedRecipe, path });
  const overlayAt = (path: TomlPath) => ({ parsed: { file: overlay!.file, diagnostics: [], doc: overlay!.doc } as unknown as ParsedRecipe, path });
  for (const name of Object.keys(overlay?.config ?? {}))
    if (!entries.some((e) => e.name === name))
      diagnostics.push(
        at(overlayAt([...overlay!.path, name]), CODES.FLEET_UNKNOWN_COMPONENT, `"${name}" is not a component of ${plan.file}`, entries.length ? `its components: ${entries.map((e) => e.name).join(', ')}` : `${plan.file} has no components`),
      );
  const layersOf = (entry: PlanEntry, i: number): OverrideLayer[] => {
    const own: OverrideLayer = { config: entry.config ?? {}, path: ['components', i, 'config'], label: 'components.config', loc: planAt };
    const over = overlay?.config[entry.name];
    return over ? [own, { config: over, path: [...overlay!.path, entry.name], label: `${overlay!.path.filter((p) => typeof p === 'string').join('.')}.${entry.name}`, loc: overlayAt }] : [own];
  };

  // 1. Units of every entry whose recipes parsed.
  const unitsOf: Unit[][] = entries.map((entry, i) => {
    const r = parsed[i];
    if (!r?.recipe) return [];
    return unitsOfEntry(entry, i, r, recipes, diagnostics, at, layersOf(entry, i));
  });

  // An entry whose recipe (or a member's) did not parse exports what nobody can know: binds to it are not checked.
  const complete = entries.map((_e, i) => !!parsed[i]?.recipe && (parsed[i]!.recipe!.members ?? []).every((m) => !!recipes.get(recipePathOf({ name: m.name, recipe: m.recipe }))?.recipe));

  // 2. Exports: each unit's, and each entry's (the union of its units', which must not collide).
  const entryExports: Array<Map<string, ExportValue>> = unitsOf.map((units) => {
    const all = new Map<string, ExportValue>();
    for (const u of units)
      for (const [key, v] of u.exports) {
        const first = all.get(key);
        if (first && first !== v)
          diagnostics.push(
            at(v, CODES.EXPORT_COLLISION, `${v.owner} and ${first.owner} both export "${key}"`, `the other is ${where(first)}: a composite's exports are one key space`),
          );
        else all.set(key, v);
      }
    return all;
  });

  // A member's recipe provides nothing to the plan; a dependency on it is pointed at its composite.
  const memberOf = new Map<string, { composite: string; name: string }>();
  parsed.forEach((r, i) => {
    for (const m of r?.recipe?.members ?? []) {
      const name = recipeName(recipes.get(recipePathOf({ name: m.name, recipe: m.recipe })));
      if (name !== undefined && !memberOf.has(name)) memberOf.set(name, { composite: entries[i]!.name, name: r!.recipe!.metadata.name });
    }
  });

  // 3. Dependencies, unit by unit: siblings by index, the rest against the plan.
  const unitDeps: Array<Array<Array<{ entry: number; unit?: number; type: DependencyType; at: Located }>>> = unitsOf.map((units, i) =>
    units.map((u) => {
      const out: Array<{ entry: number; unit?: number; type: DependencyType; at: Located }> = u.siblings.map((s) => ({ entry: i, unit: s.unit, type: s.type, at: s.at }));
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
              `component "${who}" depends on ${dep.name}, which no component of ${plan.file} provides`,
              within ? `${dep.name} is a member of composite "${within.composite}": depend on the composite (${within.name})` : 'add a component with that recipe to the plan, or remove the dependency',
            ),
          );
          continue;
        }
        if (found.length > 1) {
          diagnostics.push(at(loc, CODES.DEP_AMBIGUOUS, `component "${who}" depends on ${dep.name}, which several components provide: ${found.map((j) => entries[j]!.name).join(', ')}`));
          continue;
        }
        const j = found[0]!;
        const providerRecipe = parsed[j]!.recipe;
        // Its own errors are reported; its version cannot be checked, but it is still a dependency (binds to it are not
        // reported as binds to a stranger).
        const provided = providerRecipe?.metadata.version;
        if (provided !== undefined && dep.version !== undefined && !semver.satisfies(provided, dep.version, { includePrerelease: true })) {
          diagnostics.push(
            at({ ...loc, path: [...loc.path.slice(0, -1), 'version'] }, CODES.DEP_VERSION_MISMATCH, `component "${who}" needs ${dep.name} ${dep.version}, but "${entries[j]!.name}" is ${provided}`),
          );
        }
        out.push({ entry: j, type: dep.type, at: loc });
      }
      return out;
    }),
  );

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
        if (d.unit !== undefined) alias(unitsOf[i]![d.unit]!.member!, { exports: unitsOf[i]![d.unit]!.exports, label: unitsOf[i]![d.unit]!.name });
        else alias(entries[d.entry]!.name, { exports: entryExports[d.entry]!, label: entries[d.entry]!.name, ...(!complete[d.entry] && { unknown: true }) });
      }
      for (const s of u.brokenSiblings) aliases.set(s, { exports: new Map(), label: `${u.name.slice(0, u.name.lastIndexOf('/'))}/${s}`, unknown: true });
      return resolveRun(u, aliases, diagnostics, at);
    }),
  );

  // 5. Units become components, one per replica; edges to a unit reach every replica of it.
  const components: DesiredComponent[] = [];
  const leafIndices: number[][][] = unitsOf.map((units) => units.map(() => []));
  unitsOf.forEach((units, i) =>
    units.forEach((u, k) => {
      const { run, inputs } = resolvedRuns[i]![k]!;
      const { replicas, ...single } = run;
      const names = replicas === undefined ? [u.name] : Array.from({ length: replicas }, (_x, n) => `${u.name}/${n + 1}`);
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
        });
      }
    }),
  );
  const deps: number[][] = components.map(() => []);
  const edgeOrigin = new Map<string, Located>();
  unitsOf.forEach((units, i) =>
    units.forEach((_u, k) => {
      for (const d of unitDeps[i]![k]!) {
        const targets = d.unit !== undefined ? leafIndices[i]![d.unit]! : leafIndices[d.entry]!.flat();
        for (const from of leafIndices[i]![k]!)
          for (const to of targets) {
            if (deps[from]!.includes(to)) continue;
            deps[from]!.push(to);
            components[from]!.dependencies.push({ component: components[to]!.name, type: d.type });
            edgeOrigin.set(`${from}>${to}`, d.at);
          }
      }
    }),
  );

  for (const cycle of findCycles(deps)) {
    const names = cycle.map((n) => components[n]!.name);
    const origin = edgeOrigin.get(`${cycle[0]}>${cycle[1 % cycle.length]}`);
    const message = `dependency cycle: ${[...names, names[0]].join(' → ')}`;
    const hint = 'break the cycle, or make one edge "ordering" in the other direction';
    const edge = origin && origin.path[origin.path.length - 1] === 'name' ? { ...origin, path: origin.path.slice(0, -1) } : origin;
    diagnostics.push(edge ? at(edge, CODES.DEP_CYCLE, message, hint) : { code: CODES.DEP_CYCLE, message, hint, file: plan.file, path: '' });
  }
  if (diagnostics.length) return { ok: false, diagnostics: dedupe(diagnostics) };

  const layers = computeLayers(deps).map((layer) => layer.map((n) => components[n]!.name));
  const startOrder = layers.flat();
  const rank = new Map(startOrder.map((n, r) => [n, r]));
  const groups: DesiredGroup[] = [];
  unitsOf.forEach((units, i) => {
    const recipe = parsed[i]!.recipe!;
    const kind: GroupKind | undefined = recipe.members ? 'composite' : recipe.lifecycle?.services ? 'services' : recipe.lifecycle?.run?.replicas !== undefined ? 'replicas' : undefined;
    if (!kind) return;
    const members = leafIndices[i]!.flat().map((n) => components[n]!.name).sort((a, b) => rank.get(a)! - rank.get(b)!);
    groups.push({ name: entries[i]!.name, kind, version: recipe.metadata.version, recipePath: recipePathOf(entries[i]!), members, index: i });
  });
  return { ok: true, state: { planFile: plan.file, components, layers, startOrder, ...(groups.length && { groups }) } };
}

function recipeName(r: ParsedRecipe | undefined): string | undefined {
  const raw = (r?.doc?.raw as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
  return r?.recipe?.metadata.name ?? (typeof raw === 'string' ? raw : undefined);
}

function where(l: Located): string {
  const line = l.parsed.doc?.diagnostic(CODES.INVALID_VALUE, l.path, '').line;
  return `${l.parsed.file}${line ? `:${line}` : ''} ${l.path.join('.')}`;
}

type At = (where: Located, code: Diagnostic['code'], message: string, hint?: string) => Diagnostic;

function unitsOfEntry(
  entry: PlanEntry,
  i: number,
  r: ParsedRecipe,
  recipes: ReadonlyMap<string, ParsedRecipe>,
  diagnostics: Diagnostic[],
  at: At,
  layers: OverrideLayer[],
): Unit[] {
  const recipe = r.recipe!;
  const external = (p: ParsedRecipe) => p.recipe!.dependencies.map((dep, d) => ({ dep, at: { parsed: p, path: ['dependencies', d, 'name'] } }));

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
        diagnostics.push(at(loc, CODES.COMPOSITE_NESTED, `member ${m.name} (${m.recipe}) is ${p.recipe.members ? 'a composite' : 'several services'}: a composite's members each run one program`, 'list its parts as members of this composite instead'));
        return undefined;
      }
      return p;
    });
    for (const layer of layers)
      for (const key of Object.keys(layer.config))
        if (recipe.members.some((m) => m.name === key) && !table(layer.config[key]))
          diagnostics.push(at(layer.loc([...layer.path, key]), CODES.INVALID_TYPE, `[${layer.label}.${key}] must be a table: a composite's configuration has one section per member`));
        else if (!recipe.members.some((m) => m.name === key))
          diagnostics.push(at(layer.loc([...layer.path, key]), CODES.MEMBER_UNKNOWN, `[${layer.label}.${key}] names no member of ${entry.name}`, `members: ${recipe.members.map((m) => m.name).join(', ')}`));
    const units: Unit[] = [];
    const indexOfMember = new Map<number, number>();
    recipe.members.forEach((m, k) => {
      const p = memberRecipes[k];
      if (!p) return;
      const member = p.recipe!;
      let config = mergeConfig(member.config ?? {}, table(recipe.config?.[m.name]), { parsed: r, path: ['config', m.name] }, p.file, diagnostics, at);
      for (const layer of layers) config = mergeConfig(config, table(layer.config[m.name]), layer.loc([...layer.path, m.name]), p.file, diagnostics, at);
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
        const sibling = recipe.members!.findIndex((_s, s) => s !== k && recipeName(recipes.get(recipePathOf({ name: _s.name, recipe: _s.recipe }))) === e.dep.name);
        const si = sibling < 0 ? undefined : indexOfMember.get(sibling);
        if (sibling >= 0 && si === undefined) u.brokenSiblings.push(recipe.members![sibling]!.name);
        else if (si === undefined) u.external.push(e);
        else {
          const provided = units[si]!.recipe.metadata.version;
          if (e.dep.version !== undefined && !semver.satisfies(provided, e.dep.version, { includePrerelease: true }))
            diagnostics.push(at({ ...e.at, path: [...e.at.path.slice(0, -1), 'version'] }, CODES.DEP_VERSION_MISMATCH, `member "${u.name}" needs ${e.dep.name} ${e.dep.version}, but "${units[si]!.name}" is ${provided}`));
          u.siblings.push({ unit: si, type: e.dep.type, at: e.at });
        }
      }
      u.exports = exportsOf(u.parsed, ['exports'], u.parsed.recipe!.exports, u.config, u.name, diagnostics, at);
    });
    return units;
  }

  const config = layers.reduce((c, layer) => mergeConfig(c, layer.config, layer.loc(layer.path), r.file, diagnostics, at), recipe.config ?? {});
  const shared = exportsOf(r, ['exports'], recipe.exports, config, entry.name, diagnostics, at);
  const services = recipe.lifecycle?.services;
  if (services) {
    const names = Object.keys(services);
    return names.map((name) => {
      const svc = services[name]!;
      const run = Object.fromEntries(Object.entries(svc).filter(([k]) => !(SERVICE_ONLY_KEYS as readonly string[]).includes(k))) as RunSpec;
      const siblings = (['requires', 'after'] as const).flatMap((key) =>
        (svc[key] ?? []).flatMap((s, k) => (names.includes(s) && s !== name ? [{ unit: names.indexOf(s), type: (key === 'requires' ? 'hard' : 'ordering') as DependencyType, at: { parsed: r, path: ['lifecycle', 'services', name, key, k] } }] : [])),
      );
      const own = exportsOf(r, ['lifecycle', 'services', name, 'exports'], svc.exports, config, `${entry.name}/${name}`, diagnostics, at);
      return { entryIndex: i, name: `${entry.name}/${name}`, member: name, parsed: r, recipe, runPath: ['lifecycle', 'services', name], run, config, exports: new Map([...shared, ...own]), siblings, external: external(r), brokenSiblings: [] };
    });
  }
  return [{ entryIndex: i, name: entry.name, parsed: r, recipe, runPath: ['lifecycle', 'run'], run: recipe.lifecycle!.run!, config, exports: shared, siblings: [], external: external(r), brokenSiblings: [] }];
}

function table(v: unknown): ConfigTable | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as ConfigTable) : undefined;
}

/** `base` with `over` laid on top, key by key; a key the defaults do not have is a typo, refused at `loc`. */
function mergeConfig(base: ConfigTable, over: ConfigTable | undefined, loc: Located, defaultsFile: string, diagnostics: Diagnostic[], at: At): ConfigTable {
  if (!over) return base;
  const out: ConfigTable = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const path = [...loc.path, key];
    if (!Object.hasOwn(base, key)) {
      const known = Object.keys(base);
      diagnostics.push(at({ ...loc, path }, CODES.CONFIG_OVERRIDE_UNKNOWN, `"${key}" is not a configuration key of ${defaultsFile}`, known.length ? `its [config] keys: ${known.join(', ')}` : `${defaultsFile} has no [config]`));
      continue;
    }
    const b = table(base[key]);
    const o = table(value);
    if (b && o) out[key] = mergeConfig(b, o, { ...loc, path }, defaultsFile, diagnostics, at);
    else if (b || o) diagnostics.push(at({ ...loc, path }, CODES.INVALID_TYPE, `"${key}" is ${b ? 'a table' : 'a value'} in the defaults of ${defaultsFile}, so it must be one here too`));
    else out[key] = value;
  }
  return out;
}

/** The text of `{{config.a.b}}`, or why it has none. */
function configValue(config: ConfigTable, path: string[]): { value?: string; error?: 'unknown' | 'table' } {
  let v: unknown = config;
  for (const seg of path) {
    const t = table(v);
    if (!t || !Object.hasOwn(t, seg)) return { error: 'unknown' };
    v = t[seg];
  }
  if (table(v)) return { error: 'table' };
  return { value: String(v) };
}

function configKeys(config: ConfigTable, prefix = ''): string[] {
  return Object.entries(config).flatMap(([k, v]) => (table(v) ? configKeys(table(v)!, `${prefix}${k}.`) : [`${prefix}${k}`]));
}

function exportsOf(
  parsed: ParsedRecipe,
  path: TomlPath,
  raw: Record<string, string | number | boolean> | undefined,
  config: ConfigTable,
  owner: string,
  diagnostics: Diagnostic[],
  at: At,
): Map<string, ExportValue> {
  const out = new Map<string, ExportValue>();
  for (const [key, v] of Object.entries(raw ?? {})) {
    const loc = { parsed, path: [...path, key] };
    const text = typeof v === 'string' ? resolveText(v, loc, config, undefined, undefined, diagnostics, at) : String(v);
    out.set(key, { ...loc, value: text ?? '', owner });
  }
  return out;
}

/** `text` with its placeholders replaced; undefined (with a diagnostic) when one cannot be resolved. */
function resolveText(
  text: string,
  loc: Located,
  config: ConfigTable,
  aliases: Aliases | undefined,
  inputs: Record<string, string> | undefined,
  diagnostics: Diagnostic[],
  at: At,
): string | undefined {
  const { placeholders, error } = parseTemplate(text);
  if (error) return undefined; // reported when the recipe was parsed
  if (placeholders.length === 0) return text;
  let ok = true;
  const values = new Map<string, string>();
  for (const p of placeholders) {
    if (values.has(p.text)) continue;
    if (p.ref.kind === 'config') {
      const { value, error: why } = configValue(config, p.ref.path);
      if (value === undefined) {
        ok = false;
        const keys = configKeys(config);
        diagnostics.push(
          why === 'table'
            ? at(loc, CODES.CONFIG_NOT_SCALAR, `{{${p.text}}} is a table, not a value`, `name a key inside it: ${keys.filter((k) => k.startsWith(`${p.ref.kind === 'config' ? p.ref.path.join('.') : ''}.`)).join(', ')}`)
            : at(loc, CODES.CONFIG_UNKNOWN, `{{${p.text}}}: no such key in [config]`, keys.length ? `keys: ${keys.join(', ')}` : 'the recipe has no [config]'),
        );
        continue;
      }
      values.set(p.text, value);
    } else {
      const dep = aliases?.get(p.ref.dep);
      if (!dep) {
        ok = false;
        const known = [...(aliases?.keys() ?? [])];
        diagnostics.push(at(loc, CODES.BIND_UNKNOWN, `{{${p.text}}}: ${p.ref.dep} is not a dependency of this component`, known.length ? `its dependencies: ${known.join(', ')}` : 'declare the dependency in [[dependencies]] (or requires/after for a sibling service)'));
        continue;
      }
      if (dep.ambiguous) {
        ok = false;
        diagnostics.push(at(loc, CODES.BIND_UNKNOWN, `{{${p.text}}}: ${p.ref.dep} names both ${dep.ambiguous[0]} and ${dep.ambiguous[1]}`, 'rename the member or the plan component so that each dependency has its own name'));
        continue;
      }
      const exported = dep.exports.get(p.ref.key);
      if (!exported && dep.unknown) {
        // The dependency's own recipe has errors (reported there): what it exports cannot be known.
        ok = false;
        continue;
      }
      if (!exported) {
        ok = false;
        const keys = [...dep.exports.keys()];
        diagnostics.push(at(loc, CODES.BIND_UNKNOWN, `{{${p.text}}}: ${dep.label} exports no "${p.ref.key}"`, keys.length ? `${dep.label} exports: ${keys.join(', ')}` : `${dep.label} has no [exports]`));
        continue;
      }
      values.set(p.text, exported.value);
    }
  }
  if (!ok) return undefined;
  if (inputs) for (const [k, v] of values) inputs[k] = v;
  // Values are data (SPEC §6): one quoted word in sh code, never a new host in a check's URL, verbatim in argv and env.
  const out = substitute(text, placeholderContext(loc.path), (p) => values.get(p.text)!);
  if ('error' in out) {
    diagnostics.push(at(loc, CODES.BAD_HEALTH_CHECK, out.error, 'a value in a check\'s host or port is a host name, an address or a port number'));
    return undefined;
  }
  return out.text;
}

/** The unit's run with placeholders replaced, and the values used; a resolved health check is checked again. */
function resolveRun(
  u: Unit,
  aliases: Aliases,
  diagnostics: Diagnostic[],
  at: At,
): { run: RunSpec; script?: string; inputs?: Record<string, string> } {
  const install = u.recipe.lifecycle?.install?.script;
  const scriptHas = install !== undefined && hasPlaceholder(install);
  if (!hasPlaceholders(u.run) && !scriptHas) return { run: u.run };
  const inputs: Record<string, string> = {};
  // The install script takes the unit's configuration too (a service's, a member's): `mkdir -p {{config.data_dir}}`.
  const script = scriptHas ? (resolveText(install, { parsed: u.parsed, path: ['lifecycle', 'install', 'script'] }, u.config, aliases, inputs, diagnostics, at) ?? install) : undefined;
  const run = mapStrings(u.run, u.runPath, (text, path) => {
    if (path.length === u.runPath.length + 1 && RUN_ENUMS.has(String(path[path.length - 1]))) return text;
    return resolveText(text, { parsed: u.parsed, path }, u.config, aliases, inputs, diagnostics, at) ?? text;
  });
  const check = run.health?.check;
  if (check !== undefined && check !== u.run.health?.check) {
    const result = healthCheckRule.safeParse(check);
    if (!result.success)
      diagnostics.push(at({ parsed: u.parsed, path: [...u.runPath, 'health', 'check'] }, CODES.BAD_HEALTH_CHECK, `resolved to ${result.error.issues[0]?.message ?? `"${check}", which is not a health check`}`));
  }
  return { run, ...(script !== undefined && { script }), ...(Object.keys(inputs).length && { inputs }) };
}

const placeholderCache = new WeakMap<object, boolean>();
function hasPlaceholders(run: RunSpec): boolean {
  let has = placeholderCache.get(run);
  if (has === undefined) {
    has = JSON.stringify(run).includes('{{');
    placeholderCache.set(run, has);
  }
  return has;
}

/** The recipe one unit runs: the provider's identity and install, with exactly this run. */
function leafRecipe(own: RecipeFile, run: RunSpec, script: string | undefined): Recipe {
  const { members: _m, lifecycle: parsedLifecycle, config: _c, exports: _e, ...rest } = own;
  const lifecycle = script !== undefined && parsedLifecycle?.install ? { ...parsedLifecycle, install: { ...parsedLifecycle.install, script } } : parsedLifecycle;
  return { ...rest, lifecycle: { ...(lifecycle?.install && { install: lifecycle.install }), run } };
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
