// Loading a fleet (SPEC §13): every target's plan is checked, a target's config lands on its components, and every
// problem is named in the file that has it, with TOML path and line.
import { describe, expect, it } from 'vitest';
import { loadFleet, loadForDevice } from '../../src/load/load-fleet.js';
import { MemoryReader } from '../../src/source/memory-reader.js';

const recipe = (name: string, extra = '') => `[metadata]
name = "com.acme.${name}"
version = "1.0.0"

[config]
port = 9000
title = "plain"

[lifecycle.run]
type = "process"

[lifecycle.run.exec]
command = "sleep"
args = ["1000", "{{config.port}}", "{{config.title}}"]
${extra}`;

function repo(files: Record<string, string>): MemoryReader {
  const base: Record<string, string> = {
    'recipes/a.toml': recipe('a'),
    'recipes/b.toml': recipe('b'),
    'plans/a.toml': '[[components]]\nname = "a"\nrecipe = "recipes/a.toml"\n',
    'plans/b.toml': '[[components]]\nname = "b"\nrecipe = "recipes/b.toml"\n',
  };
  return new MemoryReader(new Map(Object.entries({ ...base, ...files }).map(([p, t]) => [p, Buffer.from(t)])), 'test');
}

const FLEET = `[[targets]]
name = "gw"
selector = { role = "gateway" }
plan = "plans/a.toml"
config = { a = { title = "gw" } }

[[targets]]
name = "rest"
selector = {}
plan = "plans/b.toml"
`;

describe('loadFleet and loadForDevice', () => {
  it('gives each device its target: the plan, and the target config on its components', async () => {
    const r = repo({ 'fleet.toml': FLEET });
    const gw = await loadForDevice(r, 'edge-1', { role: 'gateway' });
    expect(gw).toMatchObject({ ok: true, target: 'gw', planFile: 'plans/a.toml' });
    const args = gw.ok ? gw.state.components[0]!.recipe.lifecycle?.run?.exec?.args : undefined;
    expect(args).toEqual(['1000', '9000', 'gw']);
    const rest = await loadForDevice(r, 'edge-2', { role: 'sensor' });
    expect(rest).toMatchObject({ ok: true, target: 'rest', planFile: 'plans/b.toml' });
    expect(rest.ok && rest.state.components.map((c) => c.name)).toEqual(['b']);
  });

  it("a target's maintenance window goes with its devices' resolution (SPEC §19), and changes no component's hash", async () => {
    const fleet = FLEET.replace(
      'config = { a = { title = "gw" } }\n',
      'config = { a = { title = "gw" } }\nwindow = { days = ["sat"], from = "22:00", to = "04:00", timezone = "Europe/Berlin" }\n',
    );
    const gw = await loadForDevice(repo({ 'fleet.toml': fleet }), 'edge-1', { role: 'gateway' });
    expect(gw).toMatchObject({
      ok: true,
      target: 'gw',
      window: { days: ['sat'], from: 22 * 60, to: 4 * 60, timezone: 'Europe/Berlin' },
    });
    const rest = await loadForDevice(repo({ 'fleet.toml': fleet }), 'edge-2', { role: 'sensor' });
    expect(rest.ok && 'window' in rest).toBe(false);
    const plain = await loadForDevice(repo({ 'fleet.toml': FLEET }), 'edge-1', { role: 'gateway' });
    expect(gw.ok && plain.ok && gw.state.components[0]!.hash === plain.state.components[0]!.hash).toBe(true);
  });

  it('the target config changes the component hash (a config change is a restart), and nothing else does', async () => {
    const withTitle = await loadForDevice(repo({ 'fleet.toml': FLEET }), 'x', { role: 'gateway' });
    const without = await loadForDevice(
      repo({ 'fleet.toml': FLEET.replace('config = { a = { title = "gw" } }\n', '') }),
      'x',
      { role: 'gateway' },
    );
    const same = await loadForDevice(repo({ 'fleet.toml': FLEET.replace('"gw" } }', '"plain" } }') }), 'x', {
      role: 'gateway',
    });
    expect(withTitle.ok && without.ok && same.ok).toBe(true);
    if (!withTitle.ok || !without.ok || !same.ok) return;
    expect(withTitle.state.components[0]!.hash).not.toBe(without.state.components[0]!.hash);
    expect(same.state.components[0]!.hash).toBe(without.state.components[0]!.hash);
  });

  it('no target for the device: the revision is valid, the device is told with its labels', async () => {
    const r = await loadForDevice(
      repo({ 'fleet.toml': FLEET.replace('selector = {}', 'selector = { role = "sensor" }') }),
      'edge-9',
      { role: 'camera', hw: 'pi3' },
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.noTarget).toEqual({ device: 'edge-9', labels: { role: 'camera', hw: 'pi3' } });
    expect(r.diagnostics[0]!.code).toBe('KS_FLEET_NO_TARGET');
    expect(r.diagnostics[0]!.message).toBe('no target in fleet.toml matches device edge-9 (hw=pi3, role=camera)');
    expect(r.diagnostics[0]!.hint).toContain('gw, rest');
  });

  it('a plan that does not exist is named at its target, and rejects the whole revision for every device', async () => {
    const r = repo({ 'fleet.toml': FLEET.replace('plans/b.toml', 'plans/missing.toml') });
    for (const labels of [{ role: 'gateway' }, {}] as Record<string, string>[]) {
      const d = await loadForDevice(r, 'x', labels);
      expect(d.ok).toBe(false);
      if (d.ok) continue;
      expect(d.noTarget).toBeUndefined();
      expect(d.diagnostics.map((x) => ({ code: x.code, file: x.file, path: x.path, line: x.line }))).toEqual([
        { code: 'KS_FILE_NOT_FOUND', file: 'fleet.toml', path: 'targets[1].plan', line: 10 },
      ]);
    }
  });

  it('a plan that does not validate: named at the target, and its own errors where they are', async () => {
    const l = await loadFleet(
      repo({
        'fleet.toml': FLEET,
        'plans/b.toml': '[[components]]\nname = "b"\nrecipe = "recipes/b.toml"\nreplicas = 2\n',
      }),
    );
    expect(l.ok).toBe(false);
    if (l.ok) return;
    expect(l.diagnostics.map((x) => `${x.file}:${x.line} ${x.path} ${x.code}`)).toEqual([
      'fleet.toml:10 targets[1].plan KS_FLEET_PLAN_INVALID',
      'plans/b.toml:4 components[0].replicas KS_UNKNOWN_KEY',
    ]);
  });

  it("a target config naming a component the plan lacks, or a key the recipe lacks: in fleet.toml, at the target's line", async () => {
    const l = await loadFleet(
      repo({
        'fleet.toml': FLEET.replace('{ a = { title = "gw" } }', '{ a = { titel = "gw" }, nope = { port = 1 } }'),
      }),
    );
    expect(l.ok).toBe(false);
    if (l.ok) return;
    // Only these two: the plan itself is fine, so no KS_FLEET_PLAN_INVALID beside them.
    const own = l.diagnostics.map((x) => `${x.file}:${x.line} ${x.path} ${x.code}`);
    expect(own).toEqual([
      'fleet.toml:5 targets[0].config.a.titel KS_CONFIG_OVERRIDE_UNKNOWN',
      'fleet.toml:5 targets[0].config.nope KS_FLEET_UNKNOWN_COMPONENT',
    ]);
  });

  it('a config key every object inherits (toString, constructor) is an unknown key like any other', async () => {
    const l = await loadFleet(
      repo({ 'fleet.toml': FLEET.replace('{ a = { title = "gw" } }', '{ a = { toString = "x", constructor = 5 } }') }),
    );
    expect(!l.ok && l.diagnostics.map((d) => `${d.path} ${d.code}`)).toEqual([
      'targets[0].config.a.constructor KS_CONFIG_OVERRIDE_UNKNOWN',
      'targets[0].config.a.toString KS_CONFIG_OVERRIDE_UNKNOWN',
    ]);
  });

  it('no fleet.toml (and no --plan): KS_FLEET_MISSING, saying what to do', async () => {
    const l = await loadFleet(repo({}));
    expect(l.ok).toBe(false);
    if (l.ok) return;
    expect(l.diagnostics[0]).toMatchObject({ code: 'KS_FLEET_MISSING', file: 'fleet.toml' });
    expect(l.diagnostics[0]!.hint).toContain('--plan');
  });

  it('a fleet.toml that is not UTF-8, or does not parse', async () => {
    const bad = new MemoryReader(new Map([['fleet.toml', Uint8Array.from([0xff, 0xfe])]]), 'x');
    const l = await loadFleet(bad);
    expect(!l.ok && l.diagnostics[0]!.code).toBe('KS_TOML_SYNTAX');
    const l2 = await loadFleet(repo({ 'fleet.toml': '[[targets]\n' }));
    expect(!l2.ok && l2.diagnostics[0]!.code).toBe('KS_TOML_SYNTAX');
  });
});
