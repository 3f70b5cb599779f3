// The fleet view's grouping rules, pure: which target and which bucket each device lands in, and when silence counts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEVICE_STATES } from '../../src/fleet-view/device-view.js';
import { buildFleetView, NO_FLEET_FILE, NO_TARGET } from '../../src/fleet-view/fleet-view.js';
import type { DeviceReport, DeviceReports, FleetViewInput } from '../../src/fleet-view/fleet-view-input.js';

const C = 'c'.repeat(40);
const OLD = 'a'.repeat(40);
const NEW = 'e'.repeat(40);
const T = Date.parse('2026-12-01T12:00:00Z');
const min = 60_000;

const rep = (commit: string, state: string, at: number, target?: string): DeviceReport => ({
  commit,
  state,
  at,
  fields: target ? { target } : {},
  description: `${state} at ${at}`,
});
const on = (device: string, state: string, at: number, target?: string): DeviceReports => ({
  device,
  onCommit: rep(C, state, at, target),
  newest: rep(C, state, at, target),
});
const elsewhere = (device: string, commit: string, at: number, target?: string): DeviceReports => ({
  device,
  newest: rep(commit, 'success', at, target),
});

const TARGETS = [
  { name: 'pi4-eu', plan: 'plans/edge.toml' },
  { name: 'x86-us', plan: 'plans/x86.toml', devices: ['named-1', 'named-2'] },
];
const base = (over: Partial<FleetViewInput>): FleetViewInput => ({
  commit: C,
  commitTime: T - 30 * min,
  targets: TARGETS,
  reports: [],
  now: T + 60 * min,
  silentAfterMs: 10 * min,
  ...over,
});

describe('buildFleetView', () => {
  it('groups in file order, then targets the file does not name, then the devices with no target', () => {
    const v = buildFleetView(
      base({
        reports: [
          on('d-none', 'error', T),
          on('d-gone', 'success', T, 'retired'),
          on('d-x86', 'pending', T, 'x86-us'),
          on('d-pi', 'success', T, 'pi4-eu'),
        ],
      }),
    );
    expect(v.targets.map((t) => [t.name, t.plan, t.members])).toEqual([
      ['pi4-eu', 'plans/edge.toml', ['d-pi']],
      ['x86-us', 'plans/x86.toml', ['d-x86', 'named-1', 'named-2']],
      ['retired', null, ['d-gone']],
      [NO_TARGET, null, ['d-none']],
    ]);
    expect(v.devices.map((d) => d.device)).toEqual(['d-pi', 'd-x86', 'named-1', 'named-2', 'd-gone', 'd-none']);
  });

  it('no fleet.toml: one group, whatever the reports say', () => {
    const v = buildFleetView(
      base({ targets: undefined, reports: [on('a', 'success', T, 'pi4-eu'), on('b', 'error', T)] }),
    );
    expect(v.fleetFile).toBe(false);
    expect(v.targets).toEqual([
      {
        name: NO_FLEET_FILE,
        plan: null,
        devices: 2,
        success: 1,
        failure: 0,
        pending: 0,
        error: 1,
        otherCommit: 0,
        silent: 0,
        waiting: 0,
        forged: 0,
        revoked: 0,
        unverified: 0,
        members: ['a', 'b'],
      },
    ]);
  });

  it('silence counts from the first report on the commit, or the commit time when nobody reported', () => {
    const reports = [
      on('early', 'success', T),
      on('late', 'success', T + 5 * min),
      elsewhere('quiet', OLD, T - 20 * min, 'pi4-eu'),
    ];
    const at = (now: number, rs = reports) => buildFleetView(base({ now, reports: rs }));
    expect(at(T + 10 * min - 1)).toMatchObject({ silenceCounts: false, silentSince: new Date(T).toISOString() });
    expect(at(T + 10 * min - 1).devices.find((d) => d.device === 'quiet')!.state).toBe('other-commit');
    expect(at(T + 10 * min).devices.find((d) => d.device === 'quiet')!.state).toBe('silent');
    expect(at(T + 10 * min).devices.find((d) => d.device === 'named-1')!.state).toBe('silent');
    expect(at(T - 21 * min, []).silentSince).toBe(new Date(T - 30 * min).toISOString());
    expect(at(T - 21 * min, []).devices.find((d) => d.device === 'named-1')!.state).toBe('waiting');
    expect(at(T - 20 * min, []).devices.find((d) => d.device === 'named-1')!.state).toBe('silent');
  });

  it('a report from a board with an unset clock (1970) does not make the fleet silent: silence never counts from before the commit', () => {
    const v = buildFleetView(
      base({ now: T - 25 * min, reports: [on('rtc-less', 'error', Date.UTC(1970, 0, 1, 0, 1), 'pi4-eu')] }),
    );
    expect(v.silentSince).toBe(new Date(T - 30 * min).toISOString());
    expect(v.devices.find((d) => d.device === 'named-1')!.state).toBe('waiting');
  });

  it('100,000 reports on the commit (no argument-list limit)', () => {
    const reports = Array.from({ length: 100_000 }, (_, i) => on(`d-${i}`, 'success', T + i, 'pi4-eu'));
    expect(buildFleetView(base({ reports })).targets[0]!.success).toBe(100_000);
  });

  it('a device that spoke since the reports began, or moved to a newer commit, is on another commit, not silent', () => {
    const v = buildFleetView(
      base({
        reports: [
          on('a', 'success', T, 'pi4-eu'),
          elsewhere('held', OLD, T + 1 * min, 'pi4-eu'),
          elsewhere('ahead', NEW, T - 50 * min, 'pi4-eu'),
        ],
        ancestry: { [OLD]: 'older', [NEW]: 'newer' },
      }),
    );
    expect(v.devices.map((d) => [d.device, d.state, d.relation, d.commit])).toEqual([
      ['a', 'success', null, C],
      ['ahead', 'other-commit', 'newer', NEW],
      ['held', 'other-commit', 'older', OLD],
      ['named-1', 'silent', null, null],
      ['named-2', 'silent', null, null],
    ]);
  });

  it("the target of a device off the commit is its newest report's; a named device that never reported is in the first target naming it", () => {
    const v = buildFleetView(
      base({
        targets: [...TARGETS, { name: 'also', plan: 'p.toml', devices: ['named-1'] }],
        reports: [elsewhere('named-2', OLD, T, 'pi4-eu')],
      }),
    );
    expect(v.devices.map((d) => [d.device, d.target])).toEqual([
      ['named-2', 'pi4-eu'],
      ['named-1', 'x86-us'],
    ]);
    expect(v.targets.find((t) => t.name === 'also')!.devices).toBe(0);
  });

  const state = fc.constantFrom('success', 'failure', 'pending', 'error');
  const device = fc.constantFrom('d1', 'd2', 'd3', 'd4', 'd5', 'named-1', 'named-2');
  const target = fc.option(fc.constantFrom('pi4-eu', 'x86-us', 'retired'), { nil: undefined });
  const time = fc.integer({ min: T - 120 * min, max: T + 120 * min });
  const reports = fc.array(
    fc.record({
      device,
      onCommit: fc.option(fc.record({ state, at: time, target }), { nil: undefined }),
      newest: fc.option(fc.record({ commit: fc.constantFrom(OLD, NEW), at: time, target }), { nil: undefined }),
    }),
    { maxLength: 12 },
  );
  const input = fc
    .record({ reports, now: time, silentAfterMs: fc.integer({ min: 0, max: 60 * min }), fleetFile: fc.boolean() })
    .map(({ reports: rs, now, silentAfterMs, fleetFile }) =>
      base({
        now,
        silentAfterMs,
        ...(!fleetFile && { targets: undefined }),
        ancestry: { [OLD]: 'older', [NEW]: 'newer' },
        reports: rs.map((r) => {
          const onCommit = r.onCommit && rep(C, r.onCommit.state, r.onCommit.at, r.onCommit.target);
          const newest = r.newest ? rep(r.newest.commit, 'success', r.newest.at, r.newest.target) : onCommit;
          return { device: r.device, ...(onCommit && { onCommit }), ...(newest && { newest }) };
        }),
      }),
    );

  it('every device is counted exactly once, in one target and one bucket', () => {
    fc.assert(
      fc.property(input, (inp) => {
        const v = buildFleetView(inp);
        const known = new Set([
          ...inp.reports.map((r) => r.device),
          ...(inp.targets ?? []).flatMap((t) => t.devices ?? []),
        ]);
        expect(v.devices.map((d) => d.device).sort()).toEqual([...known].sort());
        expect(v.targets.flatMap((t) => t.members).sort()).toEqual([...known].sort());
        for (const t of v.targets) {
          expect(t.success + t.failure + t.pending + t.error + t.otherCommit + t.silent + t.waiting).toBe(t.devices);
          expect(t.members.length).toBe(t.devices);
          expect(
            v.devices
              .filter((d) => d.target === t.name)
              .map((d) => d.device)
              .sort(),
          ).toEqual([...t.members].sort());
        }
      }),
    );
  });

  it('a device reporting on the commit is in its state; silent and waiting follow --silent-after', () => {
    fc.assert(
      fc.property(input, (inp) => {
        const v = buildFleetView(inp);
        const first = new Map(inp.reports.map((r) => [r.device, r] as const).reverse());
        for (const d of v.devices) {
          expect(DEVICE_STATES).toContain(d.state);
          const r = first.get(d.device);
          if (r?.onCommit) expect([d.state, d.commit]).toEqual([r.onCommit.state, C]);
          if (d.state === 'silent') expect(v.silenceCounts).toBe(true);
          if (d.state === 'waiting') expect(v.silenceCounts).toBe(false);
          if (d.relation === 'newer') expect(d.state).toBe('other-commit');
        }
      }),
    );
  });
});

describe('reports that are not counted (SPEC §15)', () => {
  const forged = { counted: false, verification: { verdict: 'forged' as const, reason: 'unsigned', enrolled: true } };
  it('a forged report on the commit shows as forged, saying what it claimed; it places the device nowhere', () => {
    const v = buildFleetView(
      base({
        targets: [{ name: 'edge', plan: 'plans/edge.toml', devices: ['gw-2'] }],
        reports: [
          {
            device: 'gw-2',
            onCommit: { ...on('gw-2', 'success', T).onCommit!, fields: { target: 'elsewhere' }, ...forged },
          },
        ],
      }),
    );
    expect(v.devices[0]).toMatchObject({
      device: 'gw-2',
      target: 'edge',
      state: 'forged',
      claimed: 'success',
      report: 'forged',
      reportReason: 'unsigned',
    });
    expect(v.targets.find((t) => t.name === 'edge')).toMatchObject({ forged: 1, success: 0 });
  });

  it('a forged newest report on another commit does not make a silent device look alive', () => {
    const v = buildFleetView(
      base({
        targets: [{ name: 'edge', plan: 'plans/edge.toml', devices: ['gw-2'] }],
        reports: [
          {
            device: 'gw-2',
            newest: {
              commit: 'b'.repeat(40),
              state: 'success',
              at: T,
              fields: { target: 'other' },
              description: 'x',
              ...forged,
            },
          },
        ],
      }),
    );
    expect(v.devices[0]).toMatchObject({ device: 'gw-2', target: 'edge', state: 'silent' });
  });
});
