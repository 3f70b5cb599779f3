// The device's gate runner (SPEC §14): one read per decision, time from the host, failures decide nothing, and on a
// large fleet a bounded sample of the waves' refs. The ref source is a fake here: the real one is tested against a
// real Git server in test/source and end to end in rollout.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { RolloutGate, stateDigest, type RolloutRecall } from '../../src/agent/rollout-gate.js';
import { rolloutOf } from '../../src/core/rollout.js';
import { rolloutRef } from '../../src/status/rollout-refs.js';
import type { DesiredState } from '../../src/core/desired-state.js';
import type { RolloutState } from '../../src/core/rollout-gate.js';

const C = 'c'.repeat(40);
const rollout = rolloutOf({ waves: [{ name: 'canary', percent: 10 }, { name: 'rest', percent: 100 }], bake: '1m', min_success: 2, abort_failure_percent: 20 });
const state = (hash: string): DesiredState => ({ planFile: 'plans/a.toml', components: [{ name: 'web', hash } as never], layers: [['web']], startOrder: ['web'] });

function memory(): RolloutRecall & { seen: Map<string, number>; good: Set<string> } {
  const seen = new Map<string, number>();
  const good = new Set<string>();
  return {
    seen,
    good,
    firstSuccessSeen: (c, w) => seen.get(`${c}/${w}`),
    recordFirstSuccess: (c, w, at) => void (seen.has(`${c}/${w}`) || seen.set(`${c}/${w}`, at)),
    goodState: (d) => (good.has(d) ? 'x' : undefined),
  };
}

function refs(list: Array<[string, string, RolloutState]>) {
  return list.map(([wave, device, st]) => ({ ref: rolloutRef({ wave, device, commit: C, state: st }), oid: 'f'.repeat(40) }));
}

describe('RolloutGate', () => {
  it('bakes from the first success it saw, on the time the host answered with', async () => {
    let serverTime = 1_000_000;
    let listed = refs([['canary', 'a', 'success'], ['canary', 'b', 'applying']]);
    const asked: string[][] = [];
    const store = memory();
    const gate = new RolloutGate({ refs: { list: async (p) => (asked.push(p), { refs: listed, serverTime }) }, store, now: () => 5, random: () => 0 });
    const cand = [{ commit: C, rollout, wave: 1, state: state('h1') }];
    let r = await gate.decide(cand);
    expect('decisions' in r && r.decisions.get(C)).toMatchObject({ kind: 'held', successes: 1, needed: 2 });
    expect(store.seen.get(`${C}/canary`)).toBe(1_000_000);
    // Only the waves up to the device's own, as whole-wave prefixes.
    expect(asked[0]).toEqual(['refs/keystone-rollout/canary/', 'refs/keystone-rollout/rest/']);
    listed = refs([['canary', 'a', 'success'], ['canary', 'b', 'success']]);
    serverTime = 1_059_000;
    r = await gate.decide(cand);
    expect('decisions' in r && r.decisions.get(C)).toMatchObject({ kind: 'held', bakeLeftMs: 1000 });
    serverTime = 1_060_000;
    r = await gate.decide(cand);
    expect('decisions' in r && r.decisions.get(C)?.kind).toBe('open');
  });

  it('decides nothing when the read fails', async () => {
    const gate = new RolloutGate({ refs: { list: async () => Promise.reject(new Error('ECONNREFUSED')) }, store: memory(), now: () => 0, random: () => 0 });
    const r = await gate.decide([{ commit: C, rollout, wave: 1, state: state('h') }]);
    expect(r).toEqual({ error: expect.any(Error) });
  });

  it('reads nothing for a revert to a state that ran well here', async () => {
    const store = memory();
    store.good.add(stateDigest(state('good')));
    let reads = 0;
    const gate = new RolloutGate({ refs: { list: async () => (reads++, { refs: [] }) }, store, now: () => 0, random: () => 0 });
    const r = await gate.decide([{ commit: C, rollout, wave: 1, state: state('good') }]);
    expect('decisions' in r && r.decisions.get(C)?.kind).toBe('open');
    expect(reads).toBe(0);
  });

  it('samples buckets once a read is over budget, and stays near the budget', async () => {
    const all = refs(Array.from({ length: 4000 }, (_, i) => ['rest', `d${i}`, 'held'] as [string, string, RolloutState]));
    const sizes: number[] = [];
    const gate = new RolloutGate({
      refs: {
        list: async (prefixes) => {
          const hit = all.filter((x) => prefixes.some((p) => x.ref.startsWith(p)));
          sizes.push(hit.length);
          return { refs: hit, serverTime: 1 };
        },
      },
      store: memory(),
      now: () => 0,
      random: Math.random,
      budgetRefs: 600,
    });
    const cand = [{ commit: C, rollout, wave: 1, state: state('h') }];
    const first = await gate.decide(cand);
    expect('complete' in first && first.complete).toBe(true);
    for (let i = 0; i < 5; i++) {
      const r = await gate.decide(cand);
      expect('complete' in r && r.complete).toBe(false);
    }
    expect(sizes[0]).toBe(4000);
    for (const n of sizes.slice(1)) expect(n).toBeLessThan(900);
  });
});
