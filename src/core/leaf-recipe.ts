// The recipe one unit runs, as hashed and run: the provider's identity, install and update lock, with exactly one
// resolved run.
import type { Recipe, RecipeFile, RunSpec } from './recipe.js';

/** The recipe one unit runs: the provider's identity and install, with exactly this run. */
export function leafRecipe(own: RecipeFile, run: RunSpec, script: string | undefined): Recipe {
  const { members: _m, lifecycle: parsedLifecycle, config: _c, exports: _e, ...rest } = own;
  const lifecycle =
    script !== undefined && parsedLifecycle?.install
      ? { ...parsedLifecycle, install: { ...parsedLifecycle.install, script } }
      : parsedLifecycle;
  return {
    ...rest,
    lifecycle: {
      ...(lifecycle?.install && { install: lifecycle.install }),
      run,
      ...(lifecycle?.update && { update: lifecycle.update }),
    },
  };
}
