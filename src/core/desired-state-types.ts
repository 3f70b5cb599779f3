// The desired state: what a revision asks a device to run, unit by unit, in layers, with the groups they form.
import type { Diagnostic } from './errors.js';
import type { PlanEntry } from './plan.js';
import type { ConfigTable, Recipe } from './recipe.js';
import type { TomlPath } from './toml-locate.js';
import type { DependencyType, GroupKind } from './unit-kinds.js';

export type { DependencyType, GroupKind };

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
  /** The secrets it reads (SPEC §16), by name, sorted: in its environment (`{{secret.NAME}}`, kept as written) or as files. */
  secrets?: string[];
  /**
   * A keyed digest of each secret's value (name → hex), once the device has decrypted them (secret-digests.ts): part of
   * the hash, so that a new value restarts the component and a re-encryption of the same value restarts nothing.
   */
  secretDigests?: Record<string, string>;
}

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
