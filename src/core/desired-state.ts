// Resolution: a parsed plan plus its parsed recipes become the desired state, or every reason they cannot.
//
// A plan entry becomes one or more *units*, the things that run: the entry itself (one [lifecycle.run]), one per
// service ([lifecycle.services.NAME] → `app/web`), one per member of a composite ([[members]] → `app/proxy`), and
// one per replica (`workers/2`). The engine, the store and the API see units; groups remember which belong together.
//
// This module is the facade: the model is in desired-state-types.ts, resolution in resolve-desired-state.ts and the
// modules it uses (units-of-entry, merge-config, resolve-placeholders, leaf-recipe, dedupe-diagnostics).
export type {
  ConfigOverlay,
  DependencyType,
  DesiredComponent,
  DesiredGroup,
  DesiredState,
  GroupKind,
  ResolvedDependency,
  Resolution,
} from './desired-state-types.js';
export { resolveDesiredState } from './resolve-desired-state.js';
