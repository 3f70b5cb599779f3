// Every fuzz target of reliability/fuzz/ (issue 18: one per parser of outside input) with a few hundred to two
// thousand inputs each: arbitrary bytes, grammar-built documents and mutated corpus seeds, each judged by the
// target's oracle (a value within the parser's contract, or its own coded error) within 1 s. `npm run fuzz` runs the
// same targets with 100,000 inputs each. The seed is fixed so a failure here replays; KEYSTONE_FUZZ_SEED varies it.
import { describe, expect, it } from 'vitest';
import { TARGETS } from '../../reliability/fuzz/targets.js';
import { fuzzTarget } from '../../reliability/fuzz/run-fuzz.js';

const SEED = Number(process.env.KEYSTONE_FUZZ_SEED ?? 18);

describe('fuzz: every parser of outside input', () => {
  it('has a target for each parser the issue names', () => {
    const names = TARGETS.map((t) => t.name);
    for (const n of [
      'recipe-toml',
      'plan-toml',
      'fleet-toml',
      'revision-load',
      'fleet-load',
      'sha256sums',
      'minisign-public-key',
      'minisign-secret-key',
      'minisign-signature',
      'tar-unpack',
      'zip-unpack',
      'api-request',
      'query-params',
      'github-webhook',
      'git-ls-refs',
      'git-ref-advertisement',
      'thin-pack',
      'upload-pack-response',
      'receive-pack-advertisement',
      'receive-pack-report',
      'rollout-refs',
      'status-notes',
      'http-retry-after',
      'agent-config',
      'device-certificate',
      'revocations-toml',
      'age-secret',
    ])
      expect(names).toContain(n);
    expect(new Set(names).size).toBe(names.length);
  });

  for (const target of TARGETS) {
    it(`${target.name}: ${target.testRuns} inputs within the contract, none over 1 s, the heap bounded`, async () => {
      const r = await fuzzTarget(target, { runs: target.testRuns, seed: SEED });
      expect(
        r.finding,
        r.finding &&
          `${r.finding.message}\ninput: ${r.finding.preview}\nreplay: npm run fuzz -- --target ${target.name} --seed ${r.finding.seed} --path ${r.finding.path}`,
      ).toBeUndefined();
      expect(r.inputs).toBe(target.testRuns);
      // The generators reach past the first check: some inputs are accepted, some refused.
      expect(r.accepted).toBeGreaterThan(0);
      expect(r.refused).toBeGreaterThan(0);
      expect(r.heap.growthMb).toBeLessThan(64);
    }, 120_000);
  }
});
