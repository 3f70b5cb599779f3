// Plan files (SPEC §3): which recipes a device runs, under which names, with which configuration.
import { parsePlan } from '../../../src/core/plan.js';
import { escapesRepository } from '../../../src/core/recipe.js';
import { checkDiagnostics } from '../diagnostics-contract.js';
import { holds, utf8, type FuzzTarget } from '../fuzz-target.js';
import { tomlDocuments } from '../toml-grammar.js';

const FILE = 'plans/fuzz.toml';

export const planToml: FuzzTarget = {
  name: 'plan-toml',
  parses: 'parsePlan (src/core/plan.ts): a plan file from the repository',
  maxBytes: 8 * 1024,
  testRuns: 1_000,
  dictionary: ['[[components]]', 'name = ', 'recipe = ', '[components.config]', 'recipes/', '../', '[rollout]', '{{'],
  structured: tomlDocuments({
    tables: ['[components]', 'components.config', 'components.config.http', 'rollout', 'metadata'],
    keys: ['name', 'recipe', 'config', 'config.port', 'port', 'http.port', 'title', 'waves', 'version'],
  }),
  check(input) {
    const source = utf8(input);
    const r = parsePlan(FILE, source);
    checkDiagnostics(r.diagnostics, new Map([[FILE, source]]));
    holds(
      (r.plan === undefined) === r.diagnostics.length > 0,
      'a plan must be returned exactly when there is no diagnostic',
    );
    // Entries handed on to be read must not lead outside the repository, whatever else is wrong with the plan.
    for (const { entry } of r.readableEntries)
      holds(!escapesRepository(entry.recipe), `a readable entry escapes: ${entry.recipe}`);
    return r.plan ? 'accepted' : 'refused';
  },
};
