// Recipe files (SPEC §2), as read from a fleet repository: TOML, the schema, and the rules across fields.
import { parseRecipe } from '../../../src/core/recipe.js';
import { checkDiagnostics } from '../diagnostics-contract.js';
import { holds, utf8, type FuzzTarget } from '../fuzz-target.js';
import { tomlDocuments } from '../toml-grammar.js';

const FILE = 'recipes/fuzz.toml';

export const recipeToml: FuzzTarget = {
  name: 'recipe-toml',
  parses: 'parseRecipe (src/core/recipe.ts): a recipe file from the repository',
  maxBytes: 8 * 1024,
  testRuns: 1_000,
  dictionary: [
    '[metadata]',
    '[[artifacts]]',
    '[lifecycle.run]',
    '[lifecycle.run.health]',
    '[lifecycle.services.x]',
    '[[members]]',
    '[[dependencies]]',
    '[config]',
    '[exports]',
    'name = ',
    'version = ',
    '{{config.',
    '{{deps.',
    '}}',
    '"""',
    'sha256 = ',
  ],
  structured: tomlDocuments({
    tables: [
      'metadata',
      '[artifacts]',
      'config',
      'config.http',
      'exports',
      'lifecycle.install',
      'lifecycle.run',
      'lifecycle.run.exec',
      'lifecycle.run.health',
      'lifecycle.run.security',
      'lifecycle.run.container',
      '[lifecycle.run.container.ports]',
      '[lifecycle.run.container.mounts]',
      'lifecycle.services.web',
      'lifecycle.services.web.exec',
      'lifecycle.services.db',
      '[members]',
      '[dependencies]',
    ],
    keys: [
      'name',
      'version',
      'description',
      'uri',
      'sha256',
      'unpack',
      'type',
      'restart_policy',
      'command',
      'args',
      'env',
      'check',
      'interval',
      'timeout',
      'failure_threshold',
      'user',
      'capabilities',
      'image',
      'host_port',
      'container_port',
      'source',
      'target',
      'replicas',
      'update_strategy',
      'requires',
      'after',
      'recipe',
      'script',
      'port',
      'exec.command',
      'exec.args',
      'health.check',
      'http.port',
      'metadata.name',
      'no_new_privileges',
      'devices',
      'pid_mode',
    ],
  }),
  check(input) {
    const source = utf8(input);
    const r = parseRecipe(FILE, source);
    checkDiagnostics(r.diagnostics, new Map([[FILE, source]]));
    holds(
      (r.recipe === undefined) === r.diagnostics.length > 0,
      'a recipe must be returned exactly when there is no diagnostic',
    );
    return r.recipe ? 'accepted' : 'refused';
  },
};
