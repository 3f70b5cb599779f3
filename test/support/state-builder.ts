// An in-memory builder of desired and actual states for the pure core: no fs, no TOML files on disk.
// Recipes go through parse(recipeSchema, …) (so defaults and durations are applied as in production), the
// plan through parsePlan on generated TOML text, and both through resolveDesiredState.
import { createHash } from 'node:crypto';
import { stringify } from 'smol-toml';
import type * as v from 'valibot';
import { actualFromDesired, type ActualComponent, type ActualState } from '../../src/core/diff.js';
import {
  resolveDesiredState,
  type DependencyType,
  type DesiredState,
  type Resolution,
} from '../../src/core/desired-state.js';
import { parsePlan, type PlanEntry } from '../../src/core/plan.js';
import { recipeSchema, type ParsedRecipe, type Recipe } from '../../src/core/recipe.js';
import { parse as parseSchema } from '../../src/core/valid.js';

/** A recipe as TOML would give it, before the schema. */
export type RecipeInput = v.InferInput<typeof recipeSchema>;
type RunInput = NonNullable<NonNullable<RecipeInput['lifecycle']>['run']>;

/** A dependency by component name (`on`); a name that is no component of the list is taken as a recipe id. */
export interface DepSpec {
  on: string;
  type?: DependencyType;
  /** A semver range on the provider's version. */
  version?: string;
}

/** A compact description of one plan component and its recipe. */
export interface ComponentSpec {
  /** The component's name on the device (the plan entry's name). */
  name: string;
  /** The recipe's metadata.name; default `com.acme.<name>`. */
  id?: string;
  /** Default `1.0.0`. */
  version?: string;
  deps?: DepSpec[];
  description?: string;
  /** Process command (default `./<name>`), args and environment. */
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Run as a container of this image instead of a process (env goes to the container). */
  image?: string;
  health?: { check: string; interval?: string; timeout?: string; failure_threshold?: number };
  artifacts?: Array<{ uri: string; sha256: string; unpack?: boolean }>;
  /** The plan entry's recipe path; default `recipes/<id>.toml`. */
  recipePath?: string;
  /** Last word on the raw recipe input before it is parsed (security, install, restart policy…). */
  edit?: (raw: RecipeInput) => void;
}

const idOf = (s: ComponentSpec): string => s.id ?? `com.acme.${s.name}`;
const pathOf = (s: ComponentSpec): string => s.recipePath ?? `recipes/${idOf(s)}.toml`;

/** The recipe input of one spec; `specs` resolves `deps[].on` to recipe ids. */
export function rawRecipe(spec: ComponentSpec, specs: readonly ComponentSpec[] = [spec]): RecipeInput {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const run: RunInput = spec.image
    ? { type: 'container', container: { image: spec.image, env: { ...spec.env } } }
    : {
        type: 'process',
        exec: { command: spec.command ?? `./${spec.name}`, args: [...(spec.args ?? [])], env: { ...spec.env } },
      };
  if (spec.health) run.health = { ...spec.health };
  const raw: RecipeInput = {
    metadata: {
      name: idOf(spec),
      version: spec.version ?? '1.0.0',
      ...(spec.description !== undefined && { description: spec.description }),
    },
    artifacts: (spec.artifacts ?? []).map((a) => ({ ...a })),
    lifecycle: { run },
    dependencies: (spec.deps ?? []).map((d) => {
      const target = byName.get(d.on);
      return {
        name: target ? idOf(target) : d.on,
        type: d.type ?? 'hard',
        ...(d.version !== undefined && { version: d.version }),
      };
    }),
  };
  spec.edit?.(raw);
  return raw;
}

/** The parsed recipe of one spec (throws on a schema error: a builder misuse, not a test subject). */
export function recipe(spec: ComponentSpec, specs: readonly ComponentSpec[] = [spec]): Recipe {
  return parseSchema(recipeSchema, rawRecipe(spec, specs)) as Recipe;
}

/** The plan entry of one spec, as parsePlan gives it. */
export function planEntry(spec: ComponentSpec): PlanEntry {
  return { name: spec.name, recipe: pathOf(spec) };
}

/** The plan TOML text for the specs, in list order (= plan order). */
export function planToml(specs: readonly ComponentSpec[]): string {
  return stringify({ components: specs.map(planEntry) });
}

/** Resolves the specs as a plan; the Resolution as is, for tests of what fails. */
export function resolve(specs: readonly ComponentSpec[], planFile = 'plans/test.toml'): Resolution {
  const plan = parsePlan(planFile, planToml(specs));
  const recipes = new Map<string, ParsedRecipe>();
  for (const s of specs) {
    const file = pathOf(s);
    recipes.set(file, { file, recipe: recipe(s, specs), diagnostics: [] });
  }
  return resolveDesiredState(plan, recipes);
}

/** The desired state of the specs; throws with every diagnostic when they do not resolve. */
export function desired(specs: readonly ComponentSpec[], planFile?: string): DesiredState {
  const r = resolve(specs, planFile);
  if (!r.ok)
    throw new Error(
      `specs do not resolve:\n${r.diagnostics.map((d) => `  ${d.code} ${d.file} ${d.path}: ${d.message}`).join('\n')}`,
    );
  return r.state;
}

/** A copy of `specs` with one component changed (by name); throws when there is no such component. */
export function update(specs: readonly ComponentSpec[], name: string, patch: Partial<ComponentSpec>): ComponentSpec[] {
  if (!specs.some((s) => s.name === name)) throw new Error(`no component ${name}`);
  return specs.map((s) => (s.name === name ? { ...s, ...patch } : s));
}

/** A copy of `specs` without the named components (and without dependencies on them). */
export function without(specs: readonly ComponentSpec[], ...names: string[]): ComponentSpec[] {
  const gone = new Set(names);
  return specs
    .filter((s) => !gone.has(s.name))
    .map((s) => ({ ...s, deps: (s.deps ?? []).filter((d) => !gone.has(d.on)) }));
}

/** The four-component stack of reference/four-component-stack.md, in its plan order. */
export function stack(): ComponentSpec[] {
  return [
    { name: 'influxdb', id: 'com.acme.influxdb', version: '2.7.5', deps: [] },
    { name: 'api', id: 'com.acme.api', version: '1.4.0', deps: [{ on: 'influxdb', type: 'hard', version: '>=2.7.0' }] },
    { name: 'telemetry', id: 'com.acme.telemetry', version: '1.29.0', deps: [{ on: 'influxdb', type: 'ordering' }] },
    {
      name: 'web',
      id: 'com.acme.web',
      version: '1.27.0',
      image: 'docker.io/library/nginx:1.27-alpine',
      deps: [{ on: 'api', type: 'hard' }],
    },
  ];
}

export interface ActualTweaks {
  /** Per-component overrides of the recorded instance (running, held, hash, version, dependencies). */
  set?: Record<string, Partial<ActualComponent>>;
  /** Components of `from` the device has no record of. */
  drop?: string[];
  /** Components the device runs beyond `from`, appended (started last) in this order. */
  add?: ActualComponent[];
}

/**
 * What a device runs: `from` fully running (actualFromDesired), then tweaked. Throws on a `set` or
 * `drop` of a component that is not there, so a typo cannot make a test vacuous.
 */
export function actual(from?: DesiredState, tweaks: ActualTweaks = {}): ActualState {
  const base = from ? actualFromDesired(from).components : [];
  const names = new Set(base.map((c) => c.name));
  for (const n of [...Object.keys(tweaks.set ?? {}), ...(tweaks.drop ?? [])])
    if (!names.has(n)) throw new Error(`actual(): no component ${n} to tweak`);
  const drop = new Set(tweaks.drop ?? []);
  const components = base
    .filter((c) => !drop.has(c.name))
    .map((c) => ({ ...c, dependencies: [...c.dependencies], ...tweaks.set?.[c.name] }));
  return { components: [...components, ...(tweaks.add ?? [])] };
}

/** One recorded instance that is in no desired state (an extra, or a component since removed). */
export function instance(
  name: string,
  opts: {
    version?: string;
    running?: boolean;
    held?: boolean;
    hash?: string;
    deps?: Array<{ on: string; type?: DependencyType }>;
  } = {},
): ActualComponent {
  return {
    name,
    hash: opts.hash ?? `v1:${createHash('sha256').update(name).digest('hex')}`,
    version: opts.version ?? '1.0.0',
    running: opts.running ?? true,
    ...(opts.held !== undefined && { held: opts.held }),
    dependencies: (opts.deps ?? []).map((d) => ({ component: d.on, type: d.type ?? 'hard' })),
  };
}
