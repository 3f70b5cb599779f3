// fleet.toml (SPEC §13): targets, their selectors, device lists, config overlays and the rollout waves.
import { parseFleet } from '../../../src/core/fleet.js';
import { checkDiagnostics } from '../diagnostics-contract.js';
import { holds, utf8, type FuzzTarget } from '../fuzz-target.js';
import { tomlDocuments } from '../toml-grammar.js';

const FILE = 'fleet.toml';

export const fleetToml: FuzzTarget = {
  name: 'fleet-toml',
  parses: 'parseFleet (src/core/fleet.ts): fleet.toml from the repository',
  maxBytes: 8 * 1024,
  testRuns: 1_000,
  dictionary: [
    '[[targets]]',
    'selector = ',
    'devices = ',
    'plan = ',
    'config = ',
    '[rollout]',
    '[[rollout.waves]]',
    'percent = ',
    'bake = ',
  ],
  structured: tomlDocuments({
    tables: [
      '[targets]',
      'targets.selector',
      'targets.config',
      'targets.config.gateway',
      'rollout',
      '[rollout.waves]',
      'labels',
      'labels.role',
    ],
    keys: [
      'name',
      'plan',
      'selector',
      'devices',
      'config',
      'selector.role',
      'selector.region',
      'role',
      'region',
      'percent',
      'bake',
      'waves',
      'health',
      'min_success',
      'abort_failure_percent',
      'ring',
    ],
    values: [
      '["lab-bench-1"]',
      '["a", "a"]',
      '{ role = "gateway", region = "eu" }',
      '{ gateway = { reports = { title = "x" } } }',
      '10',
      '100',
      '101',
      '"30m"',
      '"canary"',
    ],
  }),
  check(input) {
    const source = utf8(input);
    const r = parseFleet(FILE, source);
    checkDiagnostics(r.diagnostics, new Map([[FILE, source]]));
    holds(
      (r.fleet === undefined) === r.diagnostics.length > 0,
      'a fleet must be returned exactly when there is no diagnostic',
    );
    return r.fleet ? 'accepted' : 'refused';
  },
};
