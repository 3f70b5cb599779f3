// The rollout part of the fleet view, pure: the waves counted from the rollout refs, the halt carried to every later
// wave, "waiting" until the wave before has its successes and its bake, and the bake left estimated from the
// success lines' times against an injected now.
import { describe, expect, it } from 'vitest';
import type { RolloutReport, RolloutState } from '../../src/core/rollout-gate.js';
import type { Rollout } from '../../src/core/rollout.js';
import { buildRolloutView, refWaves, type RolloutViewInput } from '../../src/fleet-view/fleet-rollout-view.js';
import { buildFleetView } from '../../src/fleet-view/fleet-view.js';
import type { DeviceReports } from '../../src/fleet-view/fleet-view-input.js';

const C = 'c'.repeat(40);
const OLD = 'a'.repeat(40);
const T = Date.parse('2026-12-01T12:00:00Z');
const min = 60_000;

const ROLLOUT: Rollout = {
  waves: [
    { name: 'canary', selector: { ring: 'canary' }, devices: ['c-1'] },
    // By selector: a percent wave takes only names that hash into it, and these names are the test's own.
    { name: 'early', selector: { ring: 'early' } },
    { name: 'everyone', percent: 100 },
  ],
  bakeMs: 10 * min,
  minSuccess: 2,
  abortFailurePercent: 34,
};

const ref = (wave: string, device: string, state: RolloutState, commit = C): RolloutReport => ({
  wave,
  device,
  commit,
  state,
});
/** A device's success line on C, with wave= as the reporter writes it (or without, as a hand-written line). */
const success = (device: string, at: number, wave?: string): DeviceReports => {
  const line = {
    commit: C,
    state: 'success',
    at,
    fields: { target: 'all', ...(wave && { wave }) },
    description: 'applied',
  };
  return { device, onCommit: line, newest: line };
};
const input = (over: Partial<RolloutViewInput>): RolloutViewInput => ({
  commit: C,
  commitTime: T - 30 * min,
  rollout: ROLLOUT,
  refs: [],
  reports: [],
  now: T,
  ...over,
});
const states = (v: ReturnType<typeof buildRolloutView>) => v.waves.map((w) => [w.name, w.state]);

/** canary: 3 devices, c-1 and c-2 succeeded at T and T+2m, c-3 applying; early: 3 held; everyone: 2 held. */
const BAKING = {
  refs: [
    ref('canary', 'c-1', 'success'),
    ref('canary', 'c-2', 'success'),
    ref('canary', 'c-3', 'applying'),
    ref('early', 'e-1', 'held'),
    ref('early', 'e-2', 'held'),
    ref('early', 'e-3', 'success', OLD), // known in early by its ref on an older commit alone
    ref('everyone', 'x-1', 'held'),
    ref('everyone', 'x-2', 'halted'),
  ],
  reports: [success('c-2', T + 2 * min, 'canary'), success('c-1', T, 'canary')],
};

describe('buildRolloutView', () => {
  it('counts each wave from the refs: devices known on any commit, states on this one', () => {
    const v = buildRolloutView(input({ ...BAKING, now: T + 6 * min }));
    expect(
      v.waves.map(({ name, devices, success, failed, applying, held }) => ({
        name,
        devices,
        success,
        failed,
        applying,
        held,
      })),
    ).toEqual([
      { name: 'canary', devices: 3, success: 2, failed: 0, applying: 1, held: 0 },
      { name: 'early', devices: 3, success: 0, failed: 0, applying: 0, held: 2 },
      { name: 'everyone', devices: 2, success: 0, failed: 0, applying: 0, held: 2 },
    ]);
    expect(v.waves.map((w) => [w.percent, w.named])).toEqual([
      [undefined, { selector: { ring: 'canary' }, devices: ['c-1'] }],
      [undefined, { selector: { ring: 'early' } }],
      [100, undefined],
    ]);
    expect(v).toMatchObject({ commit: C, bake: '10m0s', minSuccess: 2, abortFailurePercent: 34 });
    expect(v.halted).toBeUndefined();
  });

  it('the bake left runs from the oldest success line against now; the next waves wait', () => {
    const v = buildRolloutView(input({ ...BAKING, now: T + 6 * min }));
    expect(v.waves[0]).toMatchObject({
      state: 'baking',
      firstSuccessAt: new Date(T).toISOString(),
      bakeLeftMs: 4 * min,
    });
    expect(v.waves[1]).toMatchObject({ state: 'waiting', waitingFor: 'canary' });
    expect(v.waves[2]).toMatchObject({ state: 'waiting', waitingFor: 'early' });
    expect(v.waves[1]!.bakeLeftMs).toBeUndefined(); // no success there yet
  });

  it('once baked, the next wave applies; the last wave has no bake of its own', () => {
    const v = buildRolloutView(input({ ...BAKING, now: T + 10 * min }));
    expect(v.waves[0]).toMatchObject({ state: 'done', bakeLeftMs: 0 });
    expect(states(v)).toEqual([
      ['canary', 'done'],
      ['early', 'applying'],
      ['everyone', 'waiting'],
    ]);
    const all = buildRolloutView(
      input({
        refs: [ref('canary', 'c-1', 'success'), ref('everyone', 'x-1', 'success'), ref('everyone', 'x-2', 'success')],
        reports: [success('c-1', T, 'canary'), success('x-1', T + 20 * min, 'everyone')],
        now: T + 60 * min,
      }),
    );
    // early has no devices: it passes its turn on, as the gate does.
    expect(states(all)).toEqual([
      ['canary', 'done'],
      ['early', 'done'],
      ['everyone', 'done'],
    ]);
    expect(all.waves[2]!.bakeLeftMs).toBeUndefined();
    expect(all.waves[2]!.firstSuccessAt).toBe(new Date(T + 20 * min).toISOString());
  });

  it('waiting while the wave before has fewer than min_success successes (or all of its devices, if fewer)', () => {
    const one = buildRolloutView(
      input({
        refs: [ref('canary', 'c-1', 'success'), ref('canary', 'c-2', 'applying'), ref('early', 'e-1', 'held')],
        reports: [success('c-1', T - 20 * min, 'canary')],
        now: T,
      }),
    );
    expect(states(one)).toEqual([
      ['canary', 'applying'],
      ['early', 'waiting'],
      ['everyone', 'waiting'],
    ]);
    // A canary of one device: its one success is enough.
    const alone = buildRolloutView(
      input({
        refs: [ref('canary', 'c-1', 'success'), ref('early', 'e-1', 'held')],
        reports: [success('c-1', T - 20 * min, 'canary')],
        now: T,
      }),
    );
    expect(states(alone).slice(0, 2)).toEqual([
      ['canary', 'done'],
      ['early', 'applying'],
    ]);
  });

  it('halted at a wave: that wave and every later one are halted, not waiting', () => {
    const v = buildRolloutView(
      input({
        refs: [
          ref('canary', 'c-1', 'failure'),
          ref('canary', 'c-2', 'error'),
          ref('canary', 'c-3', 'success'),
          ref('early', 'e-1', 'halted'),
          ref('everyone', 'x-1', 'held'),
        ],
        reports: [success('c-3', T, 'canary')],
        now: T + 60 * min,
      }),
    );
    expect(v.halted).toEqual({ wave: 'canary', failed: 2, of: 3 });
    expect(states(v)).toEqual([
      ['canary', 'halted'],
      ['early', 'halted'],
      ['everyone', 'halted'],
    ]);
    expect(v.waves[1]).toMatchObject({ held: 1 });
    expect(v.waves.every((w) => w.waitingFor === undefined)).toBe(true);
    // c-3's success dates it, but a halted wave opens nothing: no bake to count down.
    expect(v.waves[0]).toMatchObject({ firstSuccessAt: new Date(T).toISOString() });
    expect(v.waves[0]!.bakeLeftMs).toBeUndefined();
  });

  it('a halt in a later wave leaves the earlier ones as they are', () => {
    const refs = [
      ref('canary', 'c-1', 'success'),
      ref('canary', 'c-2', 'success'),
      ref('early', 'e-1', 'failure'),
      ref('early', 'e-2', 'success'),
      ref('everyone', 'x-1', 'held'),
    ];
    const v = buildRolloutView(
      input({
        refs,
        reports: [success('c-1', T - 20 * min, 'canary'), success('c-2', T - 15 * min, 'canary')],
        now: T,
      }),
    );
    expect(v.halted).toEqual({ wave: 'early', failed: 1, of: 2 });
    expect(states(v)).toEqual([
      ['canary', 'done'],
      ['early', 'halted'],
      ['everyone', 'halted'],
    ]);
    // At the threshold, not past it: not halted (1 of 3 is 33 %, the abort is above 34 %).
    const under = buildRolloutView(
      input({
        refs: [...refs, ref('early', 'e-3', 'success')],
        reports: [success('c-1', T - 20 * min, 'canary')],
        now: T,
      }),
    );
    expect(under.halted).toBeUndefined();
  });

  it("a wave whose devices took the commit up is open, whatever the estimate says (the devices' clocks differ)", () => {
    const v = buildRolloutView(
      input({ refs: [...BAKING.refs, ref('early', 'e-1', 'applying')], reports: BAKING.reports, now: T + 6 * min }),
    );
    expect(states(v)).toEqual([
      ['canary', 'baking'],
      ['early', 'applying'],
      ['everyone', 'waiting'],
    ]);
  });

  it('the bake start: the wave= of the line first, else the rollout ref; never before the commit; unparsable times skipped', () => {
    const refs = [ref('canary', 'c-1', 'success'), ref('canary', 'c-2', 'success'), ref('early', 'e-1', 'held')];
    // c-2's line carries no wave= (its ref says canary); c-1's clock is unset (1970): it counts from the commit time.
    const unset = buildRolloutView(
      input({ refs, reports: [success('c-1', 0, 'canary'), success('c-2', T)], commitTime: T - 5 * min, now: T }),
    );
    expect(unset.waves[0]).toMatchObject({
      firstSuccessAt: new Date(T - 5 * min).toISOString(),
      bakeLeftMs: 5 * min,
      state: 'baking',
    });
    const viaRef = buildRolloutView(
      input({ refs, reports: [success('c-1', Number.NaN, 'canary'), success('c-2', T - 4 * min)], now: T }),
    );
    expect(viaRef.waves[0]).toMatchObject({ firstSuccessAt: new Date(T - 4 * min).toISOString(), bakeLeftMs: 6 * min });
    // A line that names another wave counts there, whatever the ref says.
    const named = buildRolloutView(input({ refs, reports: [success('c-2', T - 4 * min, 'early')], now: T }));
    expect(named.waves[0]!.bakeLeftMs).toBeUndefined();
    expect(named.waves[0]!.state).toBe('done'); // no time to estimate from: counted as baked
  });
});

describe('refWaves', () => {
  it("a device's wave on the commit first, else on another commit", () => {
    const w = refWaves(
      [ref('early', 'd-1', 'success', OLD), ref('canary', 'd-1', 'held'), ref('everyone', 'd-2', 'success', OLD)],
      C,
    );
    expect(Object.fromEntries(w)).toEqual({ 'd-1': 'canary', 'd-2': 'everyone' });
  });
});

describe('buildFleetView with waves', () => {
  const base = {
    commit: C,
    commitTime: T - 30 * min,
    targets: [{ name: 'all', plan: 'plans/all.toml' }],
    now: T,
    silentAfterMs: 10 * min,
  };
  const reports: DeviceReports[] = [
    success('d-line', T, 'canary'),
    success('d-ref', T),
    { device: 'd-none', newest: { commit: OLD, state: 'success', at: T, fields: {}, description: '' } },
  ];

  it("each device's wave: its line's wave=, else its rollout ref, else null", () => {
    const v = buildFleetView({
      ...base,
      reports,
      waves: new Map([
        ['d-ref', 'early'],
        ['d-line', 'everyone'],
      ]),
    });
    expect(Object.fromEntries(v.devices.map((d) => [d.device, d.wave]))).toEqual({
      'd-line': 'canary',
      'd-ref': 'early',
      'd-none': null,
    });
  });

  it('no waves given (no [rollout]): no wave key at all', () => {
    const v = buildFleetView({ ...base, reports });
    expect(v.devices.every((d) => !('wave' in d))).toBe(true);
  });
});
