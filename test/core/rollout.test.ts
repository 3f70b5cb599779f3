// [rollout] in fleet.toml (SPEC §14): validation with file, TOML path and line; wave membership; the gate.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFleet } from '../../src/core/fleet.js';
import { rolloutOf, waveHash, waveOf, type Rollout } from '../../src/core/rollout.js';
import {
  decideGate,
  waveCounts,
  type GateInput,
  type RolloutReport,
  type RolloutState,
} from '../../src/core/rollout-gate.js';

const TARGET = '[[targets]]\nname = "all"\nselector = {}\nplan = "plans/a.toml"\n';
const parsed = (rollout: string) => parseFleet('fleet.toml', `${TARGET}\n${rollout}`);
const problems = (rollout: string) =>
  parsed(rollout).diagnostics.map((d) => ({ code: d.code, path: d.path, line: d.line }));
const rolloutFrom = (text: string): Rollout => {
  const p = parsed(text);
  expect(p.diagnostics).toEqual([]);
  return rolloutOf(p.fleet!.rollout!);
};

const THREE = `[rollout]
waves = [
  { name = "canary", percent = 10 },
  { name = "early", percent = 40 },
  { name = "everyone", percent = 100 },
]
bake = "10m"
min_success = 3
abort_failure_percent = 10
`;

describe('[rollout] validation', () => {
  it('takes the SPEC example, with its durations in ms', () => {
    const r = rolloutFrom(THREE);
    expect(r).toMatchObject({ bakeMs: 600_000, minSuccess: 3, abortFailurePercent: 10 });
    expect(r.waves.map((w) => w.name)).toEqual(['canary', 'early', 'everyone']);
  });

  it('defaults: min_success 1, no failure tolerated, a 10m bake; a fleet file without [rollout] has none', () => {
    expect(rolloutFrom('[rollout]\nwaves = [{ name = "all", percent = 100 }]\n')).toMatchObject({
      bakeMs: 600_000,
      minSuccess: 1,
      abortFailurePercent: 0,
    });
    expect(parseFleet('fleet.toml', TARGET).fleet!.rollout).toBeUndefined();
  });

  it('percents must rise and end at 100, with the line of the offending wave', () => {
    expect(
      problems(
        '[rollout]\nwaves = [\n  { name = "a", percent = 40 },\n  { name = "b", percent = 20 },\n  { name = "c", percent = 100 },\n]\n',
      ),
    ).toEqual([{ code: 'KS_ROLLOUT_PERCENTS', path: 'rollout.waves[1].percent', line: 9 }]);
    expect(
      problems('[rollout]\nwaves = [\n  { name = "a", percent = 40 },\n  { name = "b", percent = 90 },\n]\n'),
    ).toEqual([{ code: 'KS_ROLLOUT_PERCENTS', path: 'rollout.waves[1].percent', line: 9 }]);
    expect(
      problems('[rollout]\nwaves = [{ name = "a", percent = 0 }, { name = "b", percent = 100 }]\n')[0],
    ).toMatchObject({ code: 'KS_INVALID_VALUE', path: 'rollout.waves[0].percent' });
  });

  it('names are unique; a wave is a percent or names devices, not both, not neither', () => {
    expect(
      problems('[rollout]\nwaves = [\n  { name = "a", percent = 50 },\n  { name = "a", percent = 100 },\n]\n'),
    ).toEqual([{ code: 'KS_ROLLOUT_DUPLICATE_WAVE', path: 'rollout.waves[1].name', line: 9 }]);
    expect(
      problems(
        '[rollout]\nwaves = [\n  { name = "lab", percent = 5, devices = ["x"] },\n  { name = "rest", percent = 100 },\n]\n',
      ),
    ).toEqual([{ code: 'KS_ROLLOUT_WAVE_RULE', path: 'rollout.waves[0].percent', line: 8 }]);
    expect(problems('[rollout]\nwaves = [\n  { name = "lab" },\n  { name = "rest", percent = 100 },\n]\n')).toEqual([
      { code: 'KS_ROLLOUT_WAVE_RULE', path: 'rollout.waves[0]', line: 8 },
    ]);
  });

  it('bad durations, unknown keys, bad labels and names carry their own codes and lines', () => {
    expect(problems('[rollout]\nwaves = [{ name = "a", percent = 100 }]\nbake = "ten minutes"\n')).toEqual([
      { code: 'KS_BAD_DURATION', path: 'rollout.bake', line: 8 },
    ]);
    expect(problems('[rollout]\nwaves = [{ name = "a", percent = 100 }]\nbake_time = "1m"\n')).toEqual([
      { code: 'KS_UNKNOWN_KEY', path: 'rollout.bake_time', line: 8 },
    ]);
    expect(
      problems(
        '[rollout]\nwaves = [{ name = "a", selector = { "bad key" = "x" } }, { name = "b", percent = 100 }]\n',
      )[0],
    ).toMatchObject({ code: 'KS_BAD_LABEL' });
    expect(problems('[rollout]\nwaves = [{ name = "no spaces", percent = 100 }]\n')[0]).toMatchObject({
      code: 'KS_BAD_NAME',
      path: 'rollout.waves[0].name',
    });
    expect(problems('[rollout]\nwaves = []\n')[0]).toMatchObject({ path: 'rollout.waves' });
    expect(
      problems('[rollout]\nwaves = [{ name = "a", percent = 100 }]\nabort_failure_percent = 101\n')[0],
    ).toMatchObject({ code: 'KS_INVALID_VALUE', path: 'rollout.abort_failure_percent' });
  });
});

describe('wave membership', () => {
  const r = rolloutFrom(THREE);

  it('follows the name hash against the cumulative percents', () => {
    for (const d of ['edge-1', 'edge-2', 'x', 'pi-042']) {
      const h = waveHash(d);
      expect(waveOf(r, d, {}).wave.name).toBe(h < 10 ? 'canary' : h < 40 ? 'early' : 'everyone');
    }
  });

  it('a wave that names the device by devices or selector wins over the hash, first such wave in order', () => {
    const named = rolloutFrom(
      '[rollout]\nwaves = [\n  { name = "lab", devices = ["bench-1"] },\n  { name = "eu", selector = { region = "eu" } },\n  { name = "rest", percent = 100 },\n]\n',
    );
    expect(waveOf(named, 'bench-1', { region: 'eu' }).wave.name).toBe('lab');
    expect(waveOf(named, 'other', { region: 'eu' }).wave.name).toBe('eu');
    expect(waveOf(named, 'other', { region: 'us' }).wave.name).toBe('rest');
  });

  it('is stable and spreads names evenly (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        (d) => waveHash(d) === waveHash(d) && waveHash(d) >= 0 && waveHash(d) < 100,
      ),
    );
    const counts = [0, 0, 0];
    for (let i = 0; i < 10_000; i++) counts[waveOf(r, `dev-${i}`, {}).index]!++;
    // 10 / 30 / 60 % of 10,000 within a few standard deviations.
    expect(Math.abs(counts[0]! - 1000)).toBeLessThan(150);
    expect(Math.abs(counts[1]! - 3000)).toBeLessThan(250);
  });
});

// Gate tests name their devices freely: waves by selector (a device's labels are its own to say), and the rest.
const GATE = `[rollout]
waves = [
  { name = "canary", selector = { ring = "canary" } },
  { name = "early", selector = { ring = "early" } },
  { name = "everyone", percent = 100 },
]
bake = "10m"
min_success = 3
abort_failure_percent = 10
`;

describe('the gate', () => {
  const r = rolloutFrom(GATE);
  const C = 'c'.repeat(40);
  const OLD = 'a'.repeat(40);
  const reports = (spec: Array<[string, string, RolloutState, string?]>): RolloutReport[] =>
    spec.map(([wave, device, state, commit]) => ({ wave, device, state, commit: commit ?? C }));
  const base = (over: Partial<GateInput>): GateInput => ({
    rollout: r,
    wave: 1,
    commit: C,
    reports: [],
    seen: () => undefined,
    now: 1_000_000,
    knownGood: false,
    ...over,
  });
  const canary3 = reports([
    ['canary', 'c1', 'success'],
    ['canary', 'c2', 'success'],
    ['canary', 'c3', 'applying'],
  ]);

  it('the first wave goes at once', () => {
    expect(decideGate(base({ wave: 0 })).kind).toBe('open');
  });

  it('holds wave k until wave k−1 has min_success successes, saying how many', () => {
    const d = decideGate(base({ reports: [...canary3, ...reports([['canary', 'c4', 'held', OLD]])] }));
    expect(d).toMatchObject({ kind: 'held', waitingFor: 'canary', successes: 2, needed: 3, observe: ['canary'] });
    expect(d.reason).toBe('held: waiting for wave canary (2 of 3 successes, baking 10m0s left)');
  });

  it('needs all of a smaller wave, counting devices known by any commit', () => {
    const small = reports([
      ['canary', 'c1', 'success'],
      ['canary', 'c2', 'success', OLD],
    ]);
    expect(decideGate(base({ reports: small, seen: () => 0 }))).toMatchObject({
      kind: 'held',
      needed: 2,
      successes: 1,
    });
    const done = reports([
      ['canary', 'c1', 'success'],
      ['canary', 'c2', 'success'],
    ]);
    expect(decideGate(base({ reports: done, seen: () => 0 })).kind).toBe('open');
    // A sample (not every bucket read): the wave's size is unknown, so min_success itself is needed.
    expect(decideGate(base({ reports: done, seen: () => 0, scale: { canary: 16 } }))).toMatchObject({
      kind: 'held',
      needed: 3,
    });
  });

  it('opens only once the first success seen is a bake old, on the clock it was seen by', () => {
    const three = reports([
      ['canary', 'c1', 'success'],
      ['canary', 'c2', 'success'],
      ['canary', 'c3', 'success'],
    ]);
    const seen = 1_000_000 - 599_000;
    expect(decideGate(base({ reports: three, seen: () => seen }))).toMatchObject({
      kind: 'held',
      bakeLeftMs: 1000,
      reason: 'held: waiting for wave canary (3 of 3 successes, baking 1s left)',
    });
    expect(decideGate(base({ reports: three, seen: () => seen - 1000 })).kind).toBe('open');
  });

  it('halts when a wave fails past the threshold, and halts every later wave too', () => {
    const failing = reports([
      ['canary', 'c1', 'failure'],
      ['canary', 'c2', 'success'],
      ['canary', 'c3', 'success'],
      ['canary', 'c4', 'success'],
    ]);
    // 1 of 4 = 25 % > 10 %.
    expect(decideGate(base({ reports: failing, wave: 2 }))).toMatchObject({
      kind: 'halted',
      wave: 'canary',
      failed: 1,
      of: 4,
      reason: 'halted at canary: 1 of 4 failed',
    });
    // The canary itself: a device there that has not applied it yet does not.
    expect(decideGate(base({ reports: failing, wave: 0 })).kind).toBe('halted');
    // An error (refused on the device) counts as a failure.
    expect(decideGate(base({ reports: reports([['canary', 'c1', 'error']]), wave: 1 })).kind).toBe('halted');
  });

  it('a revert to a known-good state is never held, not even by a halt', () => {
    expect(decideGate(base({ reports: reports([['canary', 'c1', 'failure']]), knownGood: true })).kind).toBe('open');
  });

  it('an earlier wave nobody is known in passes its turn on only after staying empty for a bake', () => {
    // early has no device: wave 2 waits, first for early to stay empty a bake, then for canary.
    const first = decideGate(base({ wave: 2, reports: reports([['canary', 'c1', 'applying']]) }));
    expect(first).toMatchObject({
      kind: 'held',
      waitingFor: 'early',
      observe: ['empty:early'],
      reason: 'held: waiting for wave early (no device known in it yet; its turn passes in 10m0s)',
    });
    const later = decideGate(
      base({
        wave: 2,
        reports: reports([['canary', 'c1', 'applying']]),
        seen: (k) => (k === 'empty:early' ? 1_000_000 - 600_000 : undefined),
      }),
    );
    expect(later).toMatchObject({ kind: 'held', waitingFor: 'canary', successes: 0 });
    // A fleet starting together: nobody known anywhere yet is not a reason to go.
    expect(decideGate(base({ wave: 1, reports: [] }))).toMatchObject({ kind: 'held', waitingFor: 'canary' });
    expect(decideGate(base({ wave: 2, reports: [], seen: () => 0 })).kind).toBe('open');
  });

  // Invariant: adding failures never opens a gate; removing successes never opens one; time never closes it.
  const stateArb = fc.constantFrom<RolloutState>('held', 'applying', 'success', 'failure', 'error');
  const reportArb = fc
    .tuple(fc.constantFrom('canary', 'early', 'everyone'), fc.integer({ min: 0, max: 15 }), stateArb)
    .map(([wave, i, state]) => ({ wave, device: `d${i}`, commit: C, state }));
  const inputArb = fc.record({
    wave: fc.integer({ min: 0, max: 2 }),
    reports: fc.uniqueArray(reportArb, { selector: (x) => x.device, maxLength: 16 }),
    seen: fc.option(fc.integer({ min: 0, max: 2_000_000 }), { nil: undefined }),
    sampled: fc.boolean(),
  });
  it('is monotone: a success turned failure, or less time, never opens it (property)', () => {
    fc.assert(
      fc.property(inputArb, fc.nat(), ({ wave, reports: rs, seen, sampled }, pick) => {
        const input = base({
          wave,
          reports: rs,
          ...(sampled && { scale: { canary: 16, early: 16, everyone: 16 } }),
          seen: () => seen,
        });
        const d = decideGate(input);
        if (d.kind !== 'open') {
          const successes = rs.filter((x) => x.state === 'success');
          if (successes.length) {
            const flip = successes[pick % successes.length]!;
            const worse = rs.map((x) => (x === flip ? { ...x, state: 'failure' as const } : x));
            expect(decideGate({ ...input, reports: worse }).kind).not.toBe('open');
          }
          expect(decideGate({ ...input, now: input.now - 1000 }).kind).not.toBe('open');
        }
        // A gate open on time stays open later (if nothing else changed).
        if (d.kind === 'open') expect(decideGate({ ...input, now: input.now + 60_000 }).kind).toBe('open');
      }),
    );
  });

  it('counts the devices a wave names before they report, in the first wave that names them', () => {
    const named = rolloutFrom(
      '[rollout]\nwaves = [\n  { name = "lab", devices = ["b1", "b2"] },\n  { name = "pilot", devices = ["b2", "p1"] },\n  { name = "rest", percent = 100 },\n]\nmin_success = 3\n',
    );
    expect(waveCounts(named, [], C).map((w) => [w.wave, w.devices])).toEqual([
      ['lab', 2],
      ['pilot', 1],
      ['rest', 0],
    ]);
    expect(
      decideGate({ ...base({ rollout: named, wave: 1 }), reports: reports([['lab', 'b1', 'success']]), seen: () => 0 }),
    ).toMatchObject({ kind: 'held', needed: 2, successes: 1 });
  });

  it('a sampled wave is never taken for empty, and its size is the sample scaled, its failures counted whole', () => {
    expect(decideGate(base({ wave: 1, reports: [], scale: { canary: 16 } }))).toMatchObject({
      kind: 'held',
      waitingFor: 'canary',
      reason: "held: waiting for wave canary (none of its devices in this read's sample)",
    });
    const c = waveCounts(
      r,
      reports([
        ['canary', 'a', 'success'],
        ['canary', 'b', 'applying'],
        ['canary', 'x', 'failure'],
      ]),
      C,
      { canary: 16 },
    );
    expect(c[0]).toMatchObject({ devices: 1 + 2 * 16, success: 1, failed: 1 });
  });

  it('counts a device once, in the wave of its report on the commit; a report a device cannot have written is not counted', () => {
    const mixed = rolloutFrom(
      '[rollout]\nwaves = [\n  { name = "canary", selector = { ring = "canary" } },\n  { name = "rest", percent = 100 },\n]\nabort_failure_percent = 40\n',
    );
    // k9 was in the canary for OLD; for C its labels put it in rest: it counts in rest, not in both.
    const left = reports([
      ['canary', 'k1', 'failure'],
      ['canary', 'k2', 'success'],
      ['canary', 'k9', 'success', OLD],
      ['rest', 'k9', 'held'],
    ]);
    expect(decideGate({ ...base({ rollout: mixed, wave: 1 }), reports: left })).toMatchObject({
      kind: 'halted',
      failed: 1,
      of: 2,
    });
    // A ref under a wave that lists its devices, from a device it does not list (any device token can push one).
    const listed = rolloutFrom(
      '[rollout]\nwaves = [\n  { name = "canary", devices = ["k1"] },\n  { name = "rest", percent = 100 },\n]\n',
    );
    expect(
      waveCounts(
        listed,
        reports([
          ['canary', 'k1', 'applying'],
          ['canary', 'ghost', 'success'],
        ]),
        C,
      )[0],
    ).toMatchObject({ devices: 1, success: 0 });
    // A percent wave takes only names that hash into it.
    const pct = rolloutFrom(THREE);
    const inCanary = Array.from({ length: 200 }, (_, i) => `n${i}`).find((d) => waveHash(d) < 10)!;
    const notCanary = Array.from({ length: 200 }, (_, i) => `n${i}`).find((d) => waveHash(d) >= 10)!;
    expect(
      waveCounts(
        pct,
        reports([
          ['canary', inCanary, 'success'],
          ['canary', notCanary, 'success'],
        ]),
        C,
      )[0],
    ).toMatchObject({ devices: 1, success: 1 });
  });

  it('counts each device once per wave, whatever commits it reported on', () => {
    const c = waveCounts(
      r,
      reports([
        ['canary', 'a', 'success'],
        ['canary', 'a', 'held', OLD],
        ['early', 'b', 'failure'],
      ]),
      C,
    );
    expect(c.map((w) => [w.wave, w.devices, w.success, w.failed])).toEqual([
      ['canary', 1, 1, 0],
      ['early', 1, 0, 1],
      ['everyone', 0, 0, 0],
    ]);
  });
});
