// The example repositories' fleet files load: every target's plan resolves, and a target's config reaches its
// components (the root example, which `npm start` runs with --plan, and the walkthrough's fleet in examples/fleet).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadFleet, loadForDevice } from '../../src/load/load-fleet.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { PROJECT_ROOT } from '../support/example-repo.js';

describe('the example fleet files', () => {
  it('the root fleet.toml: two targets, the gateways in the EU with their reports title', async () => {
    const r = new DirectoryReader(PROJECT_ROOT);
    const l = await loadFleet(r);
    expect(l.ok && l.targets.map((t) => [t.target.name, t.planFile])).toEqual([
      ['gateways-eu', 'plans/edge-gateway.toml'],
      ['edge', 'plans/edge-processes.toml'],
    ]);
    const gw = await loadForDevice(r, 'edge-7', { role: 'gateway', region: 'eu' });
    expect(gw.ok && gw.state.components.find((c) => c.name === 'gateway/reports')?.inputs?.['config.title']).toBe(
      'daily-eu',
    );
    expect(await loadForDevice(r, 'edge-8', { role: 'gateway', region: 'us' })).toMatchObject({
      ok: true,
      target: 'edge',
    });
    expect(await loadForDevice(r, 'lab-bench-1', {})).toMatchObject({ ok: true, target: 'edge' });
  });

  it('examples/fleet: gateways and sensors', async () => {
    const r = new DirectoryReader(join(PROJECT_ROOT, 'examples', 'fleet'));
    const gw = await loadForDevice(r, 'gw-1', { role: 'gateway' });
    expect(gw.ok && gw.state.components.map((c) => [c.name, c.inputs?.['config.every']])).toEqual([
      ['heartbeat', '2'],
      ['uplink', undefined],
    ]);
    const sensor = await loadForDevice(r, 'sensor-1', { role: 'sensor', site: 'lab' });
    expect(sensor.ok && sensor.state.components.map((c) => [c.name, c.inputs?.['config.every']])).toEqual([
      ['heartbeat', '5'],
    ]);
    expect(await loadForDevice(r, 'cam-1', { role: 'camera' })).toMatchObject({
      ok: false,
      noTarget: { device: 'cam-1' },
    });
  });
});
