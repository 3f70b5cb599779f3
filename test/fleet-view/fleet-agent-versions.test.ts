// The fleet view's agent versions (SPEC §17), pure: every device counted once by the agent version it runs now (its
// newest counted report's), `unknown` when none says; and, when the commit's fleet.toml names a version, per wave
// (else per target) how many of the devices it names it for run it. The text and markdown lines that show them.
import { describe, expect, it } from 'vitest';
import { renderFleetStatusMarkdown } from '../../src/cli/render/fleet-status-markdown.js';
import { agentVersionsText, renderFleetStatusText } from '../../src/cli/render/fleet-status-text.js';
import type { Verification } from '../../src/identity/report-verifier.js';
import { UNKNOWN_AGENT_VERSION } from '../../src/fleet-view/agent-version-counts.js';
import { buildFleetView } from '../../src/fleet-view/fleet-view.js';
import type { DeviceReport, DeviceReports, FleetViewInput } from '../../src/fleet-view/fleet-view-input.js';

const C = 'c'.repeat(40);
const NEW = 'e'.repeat(40);
const T = Date.parse('2026-12-01T12:00:00Z');
const min = 60_000;

const rep = (commit: string, state: string, at: number, fields: Record<string, string>): DeviceReport => ({
  commit,
  state,
  at,
  fields,
  description: `${state} at ${at}`,
});
/** A device whose newest report is its line on the commit. */
const on = (device: string, fields: Record<string, string>, state = 'success'): DeviceReports => {
  const r = rep(C, state, T, fields);
  return { device, onCommit: r, newest: r };
};

const TARGETS = [
  { name: 'gateways', plan: 'plans/gw.toml' },
  { name: 'sensors', plan: 'plans/sensor.toml', devices: ['s-never'] },
];
const base = (over: Partial<FleetViewInput>): FleetViewInput => ({
  commit: C,
  commitTime: T - 30 * min,
  targets: TARGETS,
  reports: [],
  now: T + 5 * min,
  silentAfterMs: 10 * min,
  ...over,
});

describe('agent versions in the fleet view', () => {
  it('every device once, by the version it runs: newest version first (semver, not by name), unknown last', () => {
    const v = buildFleetView(
      base({
        reports: [
          on('g-1', { target: 'gateways', agent: '0.2.0' }),
          on('g-5', { target: 'gateways', agent: '1.0.0' }),
          on('g-2', { target: 'gateways', agent: '0.10.0' }),
          on('g-3', { target: 'gateways', agent: '0.10.0' }),
          on('g-4', { target: 'gateways', agent: '0.10.0-rc.1' }),
          // An agent from before issue 29: its reports carry no version.
          on('s-old', { target: 'sensors' }),
          on('s-1', { target: 'sensors', agent: 'custom-build' }),
        ],
      }),
    );
    // s-never (named by the file, never reported) is unknown too.
    expect(v.agentVersions).toEqual({
      '1.0.0': 1,
      '0.10.0': 2,
      '0.10.0-rc.1': 1,
      '0.2.0': 1,
      'custom-build': 1,
      [UNKNOWN_AGENT_VERSION]: 2,
    });
    expect(Object.keys(v.agentVersions)).toEqual([
      '1.0.0',
      '0.10.0',
      '0.10.0-rc.1',
      '0.2.0',
      'custom-build',
      'unknown',
    ]);
    expect(Object.values(v.agentVersions).reduce((a, b) => a + b, 0)).toBe(v.devices.length);
    // No [agent] in the file: no progress to show.
    expect(v.agentUpdate).toBeUndefined();
  });

  it('what a device runs now: its newest report, also when that is on a newer commit than the one viewed', () => {
    const moved: DeviceReports = {
      device: 'g-1',
      onCommit: rep(C, 'success', T, { target: 'gateways', agent: '0.1.0' }),
      newest: rep(NEW, 'success', T + 2 * min, { target: 'gateways', agent: '0.2.0' }),
    };
    const v = buildFleetView(base({ targets: [TARGETS[0]!], reports: [moved] }));
    expect(v.agentVersions).toEqual({ '0.2.0': 1 });
    // The device's row still says what it reported this commit with.
    expect(v.devices[0]).toMatchObject({ device: 'g-1', state: 'success', agent: '0.1.0' });
  });

  it("a report that is not counted (SPEC §15) says nothing about the version: the device's own report does, else unknown", () => {
    const forged: Verification = { verdict: 'forged', reason: 'signed by another key', enrolled: true };
    const r = (fields: Record<string, string>, counted: boolean, commit = C, at = T): DeviceReport => ({
      ...rep(commit, 'success', at, fields),
      counted,
      ...(!counted && { verification: forged }),
    });
    const v = buildFleetView(
      base({
        targets: [TARGETS[0]!],
        reports: [
          // A forged newest report claims 9.9.9; the device's own line on the commit says 0.1.0.
          {
            device: 'g-1',
            onCommit: r({ target: 'gateways', agent: '0.1.0' }, true),
            newest: r({ target: 'gateways', agent: '9.9.9' }, false, NEW, T + min),
          },
          // Nothing of its own at all.
          {
            device: 'g-2',
            onCommit: r({ target: 'gateways', agent: '9.9.9' }, false),
            newest: r({ target: 'gateways', agent: '9.9.9' }, false),
          },
        ],
      }),
    );
    expect(v.agentVersions).toEqual({ '0.1.0': 1, unknown: 1 });
  });

  it('a version is only a key: one named like an Object property is counted as any other', () => {
    const v = buildFleetView(
      base({
        targets: [TARGETS[0]!],
        reports: [
          on('g-1', { target: 'gateways', agent: '__proto__' }),
          on('g-2', { target: 'gateways', agent: 'constructor' }),
        ],
      }),
    );
    expect(JSON.stringify(v.agentVersions)).toBe('{"__proto__":1,"constructor":1}');
  });

  it('per target when the file names a version and the commit has no [rollout]; a target it names none for is left out', () => {
    const v = buildFleetView(
      base({
        targets: [{ ...TARGETS[0]!, agentVersion: '0.2.0' }, TARGETS[1]!],
        reports: [
          on('g-1', { target: 'gateways', agent: '0.2.0' }),
          on('g-2', { target: 'gateways', agent: '0.1.0' }),
          on('g-3', { target: 'gateways' }),
          on('s-1', { target: 'sensors', agent: '0.1.0' }),
        ],
      }),
    );
    expect(v.agentUpdate).toEqual([{ target: 'gateways', version: '0.2.0', devices: 3, on: 1 }]);
    expect(agentVersionsText(v)).toBe('0.2.0 ×1, 0.1.0 ×2, unknown ×2 (target gateways: 1 of 3 on 0.2.0)');
  });

  it('per wave with a [rollout], in its order; a device of no known wave is left out; a target with its own version counts apart', () => {
    const waves = new Map([
      ['g-1', 'canary'],
      ['g-2', 'everyone'],
      ['g-3', 'everyone'],
      ['s-1', 'everyone'],
    ]);
    const v = buildFleetView(
      base({
        targets: [
          { ...TARGETS[0]!, agentVersion: '0.2.0' },
          { ...TARGETS[1]!, agentVersion: '0.3.0' },
        ],
        waves,
        waveOrder: ['canary', 'early', 'everyone'],
        reports: [
          on('s-1', { target: 'sensors', agent: '0.3.0', wave: 'everyone' }),
          on('g-3', { target: 'gateways', agent: '0.1.0', wave: 'everyone' }),
          on('g-2', { target: 'gateways', agent: '0.1.0', wave: 'everyone' }),
          on('g-1', { target: 'gateways', agent: '0.2.0', wave: 'canary' }),
          // Reported on no wave and has no rollout ref: in no wave's count, still in agentVersions.
          on('g-9', { target: 'gateways', agent: '0.1.0' }),
        ],
      }),
    );
    expect(v.agentUpdate).toEqual([
      { wave: 'canary', version: '0.2.0', devices: 1, on: 1 },
      { wave: 'everyone', version: '0.2.0', devices: 2, on: 0 },
      { wave: 'everyone', version: '0.3.0', devices: 1, on: 1 },
    ]);
    expect(v.agentVersions).toEqual({ '0.3.0': 1, '0.2.0': 1, '0.1.0': 3, unknown: 1 });
    expect(agentVersionsText(v)).toBe(
      '0.3.0 ×1, 0.2.0 ×1, 0.1.0 ×3, unknown ×1 (wave canary: 1 of 1 on 0.2.0; wave everyone: 0 of 2 on 0.2.0; wave everyone: 1 of 1 on 0.3.0)',
    );
  });
});

describe('the agent versions line', () => {
  const meta = { label: 'main', silentAfter: '10m' };

  it('text: under the targets (and their notes), above the rollout; absent when no report names a version and the file names none', () => {
    const v = buildFleetView(
      base({
        targets: [{ ...TARGETS[0]!, agentVersion: '0.2.0' }],
        reports: [on('g-1', { target: 'gateways', agent: '0.2.0' }), on('g-2', { target: 'gateways', agent: '0.1.0' })],
      }),
    );
    const lines = renderFleetStatusText(v, meta).split('\n');
    expect(lines.slice(-4)).toEqual([
      'gateways  plans/gw.toml  2        2        0        0        0      0             0       0',
      '',
      'agent versions: 0.2.0 ×1, 0.1.0 ×1 (target gateways: 1 of 2 on 0.2.0)',
      '',
    ]);

    const older = buildFleetView(base({ reports: [on('g-1', { target: 'gateways' })] }));
    expect(agentVersionsText(older)).toBeUndefined();
    expect(renderFleetStatusText(older, meta)).not.toContain('agent versions');
    expect(renderFleetStatusMarkdown(older, meta)).not.toContain('Agent versions');
  });

  it('markdown: one sentence under the summary, a `|` from a report kept out of the table syntax', () => {
    const v = buildFleetView(
      base({ targets: [TARGETS[0]!], reports: [on('g-1', { target: 'gateways', agent: '0.2.0|x' })] }),
    );
    const md = renderFleetStatusMarkdown(v, meta).split('\n');
    expect(md[3]).toBe('');
    expect(md[4]).toBe('Agent versions: 0.2.0\\|x ×1.');
  });
});
