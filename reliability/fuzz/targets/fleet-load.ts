// A fleet repository as a device loads it (src/load/load-fleet.ts): fleet.toml, every target's plan and recipes
// resolved with the target's config overlay, then this device's target chosen by name and labels.
import fc from 'fast-check';
import { loadForDevice } from '../../../src/load/load-fleet.js';
import { MemoryReader } from '../../../src/source/memory-reader.js';
import { checkDiagnostics } from '../diagnostics-contract.js';
import { decodeBundle, encodeBundle } from '../file-bundle.js';
import { holds, utf8, type FuzzTarget } from '../fuzz-target.js';
import { fleetToml } from './fleet-toml.js';
import { fileTexts, generatedRevision } from './revision-load.js';

const LABELS = { role: 'gateway', region: 'eu' };

/** fleet.toml from its grammar beside a generated revision whose plan is the one the grammar's values name. */
const structured = fc.tuple(fleetToml.structured!, generatedRevision).map(([fleet, revision]) => {
  const files = new Map(
    [...decodeBundle(revision)].map(([p, b]) => [p === 'plans/fuzz.toml' ? 'plans/edge.toml' : p, utf8(b)]),
  );
  return encodeBundle(new Map([['fleet.toml', utf8(fleet)], ...files]));
});

export const fleetLoad: FuzzTarget = {
  name: 'fleet-load',
  parses: "loadForDevice (src/load/load-fleet.ts): fleet.toml, every target resolved, the device's target chosen",
  maxBytes: 48 * 1024,
  testRuns: 300,
  dictionary: [
    '=== fleet.toml\n',
    '[[targets]]',
    'selector = {}',
    'devices = ["gw-1"]',
    'config = { ',
    'plan = "plans/',
    '[rollout]',
    'waves = [',
    '{{config.',
  ],
  structured,
  async check(input) {
    const files = decodeBundle(input);
    const r = await loadForDevice(new MemoryReader(files, 'fuzz'), 'gw-1', LABELS);
    if (r.ok) return 'accepted';
    holds(r.diagnostics.length > 0, 'refused without a diagnostic');
    checkDiagnostics(r.diagnostics, fileTexts(files));
    return 'refused';
  },
};
