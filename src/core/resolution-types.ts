// The shapes resolution passes between its steps: located values, units before replicas, aliases of binds.
import { CODES, type Diagnostic } from './errors.js';
import type { ConfigTable, ParsedRecipe, RecipeDependency, RecipeFile, RunSpec } from './recipe.js';
import type { DependencyType } from './desired-state-types.js';
import type { TomlPath } from './toml-locate.js';

export interface Located {
  parsed: ParsedRecipe;
  path: TomlPath;
}

export interface ExportValue extends Located {
  value: string;
  /** The unit (or group) that exports it, for messages. */
  owner: string;
}

/** One runnable thing before replicas are expanded. */
export interface Unit {
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

export type Aliases = Map<
  string,
  { exports: Map<string, ExportValue>; label: string; unknown?: boolean; ambiguous?: [string, string] }
>;

/** One layer of configuration overrides on a plan entry: where it is written, and what it sets. */
export interface OverrideLayer {
  config: ConfigTable;
  path: TomlPath;
  /** How messages name it: `components.config`, `targets.config.api`. */
  label: string;
  loc: (path: TomlPath) => Located;
}

export type At = (where: Located, code: Diagnostic['code'], message: string, hint?: string) => Diagnostic;

/** `file:line path` of a located value, for messages that point at a second place. */
export function where(l: Located): string {
  const line = l.parsed.doc?.diagnostic(CODES.INVALID_VALUE, l.path, '').line;
  return `${l.parsed.file}${line ? `:${line}` : ''} ${l.path.join('.')}`;
}
