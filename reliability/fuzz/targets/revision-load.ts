// A whole revision as the agent loads it (src/load/load-revision.ts): the plan, the recipes it names, composites'
// member recipes, then resolution (placeholders, dependencies, the graph). Files come from a MemoryReader, as with
// `keystonectl apply`; inputs are file bundles (file-bundle.ts).
import { loadRevision } from '../../../src/load/load-revision.js';
import { MemoryReader } from '../../../src/source/memory-reader.js';
import fc from 'fast-check';
import { checkDiagnostics } from '../diagnostics-contract.js';
import { decodeBundle, encodeBundle } from '../file-bundle.js';
import { holds, utf8, type FuzzTarget } from '../fuzz-target.js';
import { planToml } from './plan-toml.js';
import { recipeToml } from './recipe-toml.js';

export const PLAN = 'plans/fuzz.toml';

export const fileTexts = (files: ReadonlyMap<string, Uint8Array>) =>
  new Map([...files].map(([p, b]) => [p, Buffer.from(b).toString('utf8')]));

/** A plan and two recipes from their grammars, at the paths the grammar's values name. */
export const generatedRevision = fc
  .tuple(planToml.structured!, recipeToml.structured!, recipeToml.structured!)
  .map(([plan, api, web]) =>
    encodeBundle(
      new Map([
        [PLAN, utf8(plan)],
        ['recipes/com.acme.api.toml', utf8(api)],
        ['recipes/com.acme.web.toml', utf8(web)],
      ]),
    ),
  );

export const revisionLoad: FuzzTarget = {
  name: 'revision-load',
  parses:
    'loadRevision + resolveDesiredState (src/load/load-revision.ts, src/core/resolve-desired-state.ts): a plan and its recipes',
  maxBytes: 32 * 1024,
  testRuns: 500,
  dictionary: [
    '=== recipes/a.toml\n',
    '=== plans/fuzz.toml\n',
    '{{config.',
    '{{deps.',
    '.exports.',
    '}}',
    '[[components]]',
    '[[members]]',
    '[[dependencies]]',
    'type = "ordering"',
    'requires = [',
    'replicas = ',
    '[lifecycle.services.',
    'recipe = "recipes/',
  ],
  structured: generatedRevision,
  async check(input) {
    const files = decodeBundle(input);
    const r = await loadRevision(new MemoryReader(files, 'fuzz'), PLAN);
    if (r.ok) {
      holds(r.state !== undefined, 'ok without a state');
      return 'accepted';
    }
    holds(r.diagnostics.length > 0, 'refused without a diagnostic');
    checkDiagnostics(r.diagnostics, fileTexts(files));
    return 'refused';
  },
};
