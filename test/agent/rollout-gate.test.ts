// The device's gate runner (SPEC §14): one read per decision, time from the host, failures decide nothing, and on a
// large fleet a bounded sample of the waves' refs. The ref source is a fake here: the real one is tested against a
// real Git server in test/source and end to end in rollout.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { RolloutGate, stateDigest, type RolloutRecall } from '../../src/agent/rollout-gate.js';
import { rolloutOf } from '../../src/core/rollout.js';
import { bucketOf, failuresPrefix, rolloutPrefixes, rolloutRef } from '../../src/report/rollout-refs.js';
import type { DesiredState } from '../../src/core/desired-state.js';
import type { RolloutState } from '../../src/core/rollout-gate.js';

const C = 'c'.repeat(40);
const C1 = C;
// The canary by selector: its devices are named freely here (a percent wave takes only names that hash into it).
const rollout = rolloutOf({
  waves: [
    { name: 'canary', selector: { ring: 'canary' } },
    { name: 'rest', percent: 100 },
  ],
  bake: '1m',
  min_success: 2,
  abort_failure_percent: 20,
});
const state = (hash: string): DesiredState => ({
  planFile: 'plans/a.toml',
  components: [{ name: 'web', hash } as never],
  layers: [['web']],
  startOrder: ['web'],
});

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
  return list.map(([wave, device, st]) => ({
    ref: rolloutRef({ wave, device, commit: C, state: st }),
    oid: 'f'.repeat(40),
  }));
}

describe('RolloutGate', () => {
  it('bakes from the first success it saw, on the time the host answered with', async () => {
    let serverTime = 1_000_000;
    let listed = refs([
      ['canary', 'a', 'success'],
      ['canary', 'b', 'applying'],
    ]);
    const asked: string[][] = [];
    const store = memory();
    const gate = new RolloutGate({
      refs: { list: async (p) => (asked.push(p), { refs: listed, serverTime }) },
      store,
      now: () => 5,
      random: () => 0,
    });
    const cand = [{ commit: C, rollout, wave: 1, state: state('h1') }];
    // The first read of a wave is a sample (one bucket of 256), the next at most 16 times that; then, the waves being
    // small, whole-wave prefixes. A sample may miss the canary, and says so.
    let r = await gate.decide(cand);
    // One bucket of each wave, and the failures of the commit in each.
    expect(asked[0]).toHaveLength(2 + 2);
    for (let i = 0; i < 3 && !('complete' in r && r.complete); i++) r = await gate.decide(cand);
    expect(asked.length).toBe(3);
    // Whole: every bucket of each wave by its exact subtree, and the commit's failures (never all of a wave's refs).
    expect(asked[2]).toEqual([
      ...rolloutPrefixes(['canary']),
      failuresPrefix('canary', C),
      ...rolloutPrefixes(['rest']),
      failuresPrefix('rest', C),
    ]);
    expect('decisions' in r && r.decisions.get(C)).toMatchObject({ kind: 'held', successes: 1, needed: 2 });
    expect(store.seen.get(`${C}/canary`)).toBe(1_000_000);
    listed = refs([
      ['canary', 'a', 'success'],
      ['canary', 'b', 'success'],
    ]);
    serverTime = 1_059_000;
    r = await gate.decide(cand);
    expect('decisions' in r && r.decisions.get(C)).toMatchObject({ kind: 'held', bakeLeftMs: 1000 });
    serverTime = 1_060_000;
    r = await gate.decide(cand);
    expect('decisions' in r && r.decisions.get(C)?.kind).toBe('open');
  });

  it('decides nothing when the read fails', async () => {
    const gate = new RolloutGate({
      refs: { list: async () => Promise.reject(new Error('ECONNREFUSED')) },
      store: memory(),
      now: () => 0,
      random: () => 0,
    });
    const r = await gate.decide([{ commit: C, rollout, wave: 1, state: state('h') }]);
    expect(r).toEqual({ error: expect.any(Error) });
  });

  it('reads nothing for a revert to a state that ran well here', async () => {
    const store = memory();
    store.good.add(stateDigest(state('good')));
    let reads = 0;
    const gate = new RolloutGate({
      refs: { list: async () => (reads++, { refs: [] }) },
      store,
      now: () => 0,
      random: () => 0,
    });
    const r = await gate.decide([{ commit: C, rollout, wave: 1, state: state('good') }]);
    expect('decisions' in r && r.decisions.get(C)?.kind).toBe('open');
    expect(reads).toBe(0);
  });

  // SPEC §17: a commit whose [agent] would install another version is no revert, whatever its components: an agent
  // update (or a downgrade to a version this device once ran, with allow_downgrade) goes through the waves. The review
  // of issue 32 found an [agent]-only commit opened on every wave at once; a digest holding the version would have
  // gated every plain revert made after an agent update instead.
  it('a known-good state that would install another agent version is read like any commit; with the running version, not', async () => {
    const store = memory();
    store.good.add(stateDigest(state('good')));
    let reads = 0;
    const gate = new RolloutGate({
      refs: { list: async () => (reads++, { refs: [], serverTime: 1_000 }) },
      store,
      now: () => 0,
      random: () => 0,
    });
    const installs = await gate.decide([{ commit: C, rollout, wave: 1, state: state('good'), installsAgent: true }]);
    expect('decisions' in installs && installs.decisions.get(C)?.kind).toBe('held');
    expect(reads).toBe(1);
    const same = await gate.decide([{ commit: C, rollout, wave: 1, state: state('good'), installsAgent: false }]);
    expect('decisions' in same && same.decisions.get(C)?.kind).toBe('open');
    expect(reads).toBe(1);
  });

  it('samples from the first read on, sizes the sample per wave, and stays near the budget', async () => {
    const all = refs(
      Array.from({ length: 4000 }, (_, i) => ['rest', `d${i}`, 'held'] as [string, string, RolloutState]),
    );
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
    for (let i = 0; i < 6; i++) {
      const r = await gate.decide(cand);
      expect('complete' in r && r.complete).toBe(false);
    }
    // The first read: one bucket of each wave, ~1/256 of the 4,000; then at most 16 times that, then ~the budget.
    expect(sizes[0]).toBeLessThan(60);
    expect(sizes[1]).toBeLessThan(500);
    for (const n of sizes.slice(1)) expect(n).toBeLessThan(900);
  });
});

const ref = (wave: string, device: string, st: RolloutState, commit = C1) => ({
  ref: rolloutRef({ wave, device, commit, state: st }),
  oid: 'f'.repeat(40),
});

describe('RolloutGate on a sample (found by review)', () => {
  // docs/rollouts.md: "Sampling can only make the gate open later, never earlier".
  it('a small canary outside the sample is not taken for an empty wave, and its failure halts', async () => {
    const rollout = rolloutOf({
      waves: [
        { name: 'canary', selector: { ring: 'canary' } },
        { name: 'rest', percent: 100 },
      ],
      bake: '1m',
      min_success: 1,
      abort_failure_percent: 0,
    });
    const canary = ['c1', 'c2', 'c3'];
    // Buckets 37, 7b, 9f: outside the groups 0x and 1x that random() = 0 samples.
    for (const d of canary) expect(['0', '1']).not.toContain(bucketOf(d)[0]);
    const rest = Array.from({ length: 4000 }, (_, i) => ref('rest', `d${i}`, 'held'));
    let canaryRefs = canary.map((d) => ref('canary', d, 'applying'));
    let time = 1_000_000;
    const list = async (prefixes: string[]) => ({
      refs: [...canaryRefs, ...rest].filter((x) => prefixes.some((p) => x.ref.startsWith(p))),
      serverTime: time,
    });
    const gate = new RolloutGate({ refs: { list }, store: memory(), now: () => 0, random: () => 0, budgetRefs: 600 });
    const cand = [{ commit: C1, rollout, wave: 1, state: state('h') }];
    const first = await gate.decide(cand);
    expect('decisions' in first && first.decisions.get(C1)?.kind).toBe('held');
    // The canary's first device fails: with abort_failure_percent 0 the commit is halted.
    canaryRefs = [ref('canary', 'c1', 'failure'), ref('canary', 'c2', 'applying'), ref('canary', 'c3', 'applying')];
    const full = await new RolloutGate({
      refs: { list },
      store: memory(),
      now: () => 0,
      random: () => 0,
      budgetRefs: 600,
    }).decide(cand);
    expect('decisions' in full && full.decisions.get(C1)?.kind).toBe('halted'); // an exact read says halted
    time += 5_000;
    await gate.decide(cand); // sampled: canary unseen, "no device known in it yet"
    time += 61_000;
    const later = await gate.decide(cand);
    expect('complete' in later && later.complete).toBe(false);
    // SPEC §14: a halted rollout stays halted; no later wave applies it. Sampling must not open it.
    expect('decisions' in later && later.decisions.get(C1)?.kind).not.toBe('open');
  });

  it('with abort_failure_percent 0, a canary failure outside the sampled buckets still halts: failures are read whole', async () => {
    const rollout = rolloutOf({
      waves: [
        { name: 'canary', selector: { ring: 'canary' } },
        { name: 'rest', percent: 100 },
      ],
      bake: '0s',
      min_success: 1,
      abort_failure_percent: 0,
    });
    // 400 canary devices, 4000 in rest; one canary failure in a bucket outside the sample, successes inside it.
    const canary = Array.from({ length: 400 }, (_, i) => `k${i}`);
    const failing = canary.find((d) => !['0', '1'].includes(bucketOf(d)[0]!))!;
    let canaryRefs = canary.map((d) => ref('canary', d, 'applying'));
    const rest = Array.from({ length: 4000 }, (_, i) => ref('rest', `d${i}`, 'held'));
    const list = async (prefixes: string[]) => ({
      refs: [...canaryRefs, ...rest].filter((x) => prefixes.some((p) => x.ref.startsWith(p))),
      serverTime: 1,
    });
    const gate = new RolloutGate({ refs: { list }, store: memory(), now: () => 0, random: () => 0, budgetRefs: 600 });
    const cand = [{ commit: C1, rollout, wave: 1, state: state('h') }];
    const first = await gate.decide(cand); // complete, the canary still applying: held
    expect('decisions' in first && first.decisions.get(C1)?.kind).toBe('held');
    canaryRefs = canary.map((d) => ref('canary', d, d === failing ? 'failure' : 'success'));
    const exact = await new RolloutGate({
      refs: { list },
      store: memory(),
      now: () => 0,
      random: () => 0,
      budgetRefs: 600,
    }).decide(cand);
    expect('decisions' in exact && exact.decisions.get(C1)?.kind).toBe('halted'); // an exact read: halted
    const sampled = await gate.decide(cand);
    expect('decisions' in sampled && sampled.decisions.get(C1)?.kind).toBe('halted');
  });
});

describe('RolloutGate and clocks (found by review)', () => {
  // docs/rollouts.md: "A device's clock skew does not matter to the gate".
  it("an answer without a usable Date decides nothing: this device's clock (a day ahead) is never set against the host's", async () => {
    const rollout = rolloutOf({
      waves: [
        { name: 'canary', selector: { ring: 'canary' } },
        { name: 'rest', percent: 100 },
      ],
      bake: '10m',
      min_success: 1,
      abort_failure_percent: 0,
    });
    let serverTime: number | undefined = 1_700_000_000_000;
    const gate = new RolloutGate({
      refs: {
        list: async () => ({ refs: [ref('canary', 'k1', 'success')], ...(serverTime !== undefined && { serverTime }) }),
      },
      store: memory(),
      now: () => 1_700_000_000_000 + 86_400_000,
      random: () => 0,
    });
    const cand = [{ commit: C1, rollout, wave: 1, state: state('h') }];
    const a = await gate.decide(cand);
    expect('decisions' in a && a.decisions.get(C1)?.kind).toBe('held');
    serverTime = undefined; // e.g. a proxy dropping Date, or a Date not in IMF-fixdate ("Sun, 6 Nov ...")
    const b = await gate.decide(cand);
    expect(b).toEqual({ error: expect.objectContaining({ message: expect.stringContaining('no usable Date') }) });
  });
});
