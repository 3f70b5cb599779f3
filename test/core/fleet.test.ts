// fleet.toml (SPEC §13): what the file alone can tell, with file, TOML path and line; which target takes a device.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFleet, selectTarget, targetMatches, type Fleet } from '../../src/core/fleet.js';
import { deviceNameProblem, formatLabels, labelsFromArgs, parseLabelArg } from '../../src/core/labels.js';

const parsed = (text: string) => parseFleet('fleet.toml', text);
const fleetOf = (text: string): Fleet => {
  const p = parsed(text);
  expect(p.diagnostics).toEqual([]);
  return p.fleet!;
};
const only = (text: string) => {
  const p = parsed(text);
  expect(p.fleet).toBeUndefined();
  return p.diagnostics.map((d) => ({ code: d.code, path: d.path, line: d.line }));
};

const TWO = `
[[targets]]
name = "pi4-eu"
selector = { hw = "pi4", region = "eu" }
devices = ["edge-7"]
plan = "plans/edge.toml"

[[targets]]
name = "rest"
selector = {}
plan = "plans/./small.toml"
`;

describe('target selection', () => {
  const fleet = fleetOf(TWO);

  it('takes the first target whose selector labels all match, in file order', () => {
    expect(selectTarget(fleet, 'a', { hw: 'pi4', region: 'eu', extra: 'x' })?.target.name).toBe('pi4-eu');
    expect(selectTarget(fleet, 'a', { hw: 'pi4', region: 'us' })?.target.name).toBe('rest');
    expect(selectTarget(fleet, 'a', {})?.index).toBe(1);
  });

  it('takes a device named in devices whatever its labels', () => {
    expect(selectTarget(fleet, 'edge-7', {})?.target.name).toBe('pi4-eu');
    expect(selectTarget(fleet, 'edge-8', {})?.target.name).toBe('rest');
  });

  it('a target without selector takes only its devices; no match is undefined', () => {
    const f = fleetOf('[[targets]]\nname = "lab"\ndevices = ["bench"]\nplan = "plans/a.toml"\n');
    expect(selectTarget(f, 'bench', { any: 'thing' })?.target.name).toBe('lab');
    expect(selectTarget(f, 'other', {})).toBeUndefined();
    expect(selectTarget(fleetOf(''), 'x', {})).toBeUndefined();
  });

  it('normalises plan paths', () => {
    expect(fleet.targets[1]!.plan).toBe('plans/./small.toml');
  });

  // Invariants: the choice is the first matching target, and more labels never lose a selector match.
  const key = fc.constantFrom('hw', 'region', 'role');
  const value = fc.constantFrom('a', 'b');
  const labels = fc.dictionary(key, value, { maxKeys: 3 });
  const target = fc.record({
    selector: fc.option(labels, { nil: undefined }),
    devices: fc.option(fc.subarray(['d1', 'd2', 'd3']), { nil: undefined }),
  });
  it('picks the first match; adding labels never unmatches a selector', () => {
    fc.assert(
      fc.property(
        fc.array(target, { maxLength: 5 }),
        fc.constantFrom('d1', 'd2', 'd4'),
        labels,
        labels,
        (ts, device, mine, more) => {
          const f: Fleet = {
            targets: ts.map((t, i) => ({
              name: `t${i}`,
              plan: 'plans/p.toml',
              ...(t.selector && { selector: t.selector }),
              ...(t.devices && { devices: t.devices }),
            })),
          };
          const chosen = selectTarget(f, device, mine);
          const first = f.targets.findIndex((t) => targetMatches(t, device, mine));
          expect(chosen?.index ?? -1).toBe(first);
          for (const t of f.targets)
            if (targetMatches(t, device, mine)) expect(targetMatches(t, device, { ...more, ...mine })).toBe(true);
        },
      ),
    );
  });
});

describe('fleet.toml validation', () => {
  it('an unknown key, with the line and a suggestion', () => {
    const p = parsed('[[targets]]\nname = "a"\nselector = {}\nplann = "plans/a.toml"\n');
    const unknown = p.diagnostics.find((d) => d.code === 'KS_UNKNOWN_KEY')!;
    expect(unknown).toMatchObject({ file: 'fleet.toml', path: 'targets[0].plann', line: 4 });
    expect(unknown.hint).toContain('plan');
    expect(p.diagnostics.map((d) => d.code)).toContain('KS_MISSING_FIELD');
  });

  it('a top-level key it does not know', () => {
    expect(only('rollouts = 1\n')).toEqual([{ code: 'KS_UNKNOWN_KEY', path: 'rollouts', line: 1 }]);
  });

  it('two targets with one name, naming the first', () => {
    const p = parsed(
      '[[targets]]\nname = "a"\nselector = {}\nplan = "plans/a.toml"\n\n[[targets]]\nname = "a"\nselector = {}\nplan = "plans/b.toml"\n',
    );
    expect(p.diagnostics).toHaveLength(1);
    expect(p.diagnostics[0]).toMatchObject({ code: 'KS_FLEET_DUPLICATE_TARGET', path: 'targets[1].name', line: 7 });
    expect(p.diagnostics[0]!.hint).toContain('line 2');
  });

  it('bad labels: a key, a value, a value that is not a string', () => {
    expect(only('[[targets]]\nname = "a"\nselector = { "bad key" = "x" }\nplan = "plans/a.toml"\n')).toEqual([
      { code: 'KS_BAD_LABEL', path: 'targets[0].selector."bad key"', line: 3 },
    ]);
    expect(only('[[targets]]\nname = "a"\nplan = "plans/a.toml"\n[targets.selector]\nhw = "pi 4"\n')).toEqual([
      { code: 'KS_BAD_LABEL', path: 'targets[0].selector.hw', line: 5 },
    ]);
    expect(only('[[targets]]\nname = "a"\nselector = { rev = 3 }\nplan = "plans/a.toml"\n')).toEqual([
      { code: 'KS_INVALID_TYPE', path: 'targets[0].selector.rev', line: 3 },
    ]);
  });

  it('a datetime where a table goes is refused, not read as an empty table with its defaults', () => {
    expect(
      only('rollout = 1979-05-27T07:32:00Z\n[[targets]]\nname = "a"\nselector = {}\nplan = "plans/a.toml"\n'),
    ).toEqual([{ code: 'KS_INVALID_TYPE', path: 'rollout', line: 1 }]);
  });

  it('a selector key __proto__ is refused, not dropped (an empty selector read from it would take every device)', () => {
    expect(only('[[targets]]\nname = "a"\nselector = { __proto__ = "prod" }\nplan = "plans/a.toml"\n')).toEqual([
      { code: 'KS_INVALID_VALUE', path: 'targets[0].selector.__proto__', line: 3 },
    ]);
  });

  it('a target that matches nothing, a plan outside the repository, bad names', () => {
    expect(only('[[targets]]\nname = "a"\nplan = "plans/a.toml"\n')).toEqual([
      { code: 'KS_FLEET_TARGET_EMPTY', path: 'targets[0]', line: 1 },
    ]);
    expect(only('[[targets]]\nname = "a"\nselector = {}\nplan = "../etc/a.toml"\n')).toEqual([
      { code: 'KS_PATH_ESCAPE', path: 'targets[0].plan', line: 4 },
    ]);
    expect(only('[[targets]]\nname = "a b"\nselector = {}\nplan = "plans/a.toml"\n')).toEqual([
      { code: 'KS_BAD_NAME', path: 'targets[0].name', line: 2 },
    ]);
    expect(only('[[targets]]\nname = "a"\ndevices = ["ok", "not ok"]\nplan = "plans/a.toml"\n')).toEqual([
      { code: 'KS_BAD_NAME', path: 'targets[0].devices[1]', line: 3 },
    ]);
  });

  it('a plan that is not a .toml under plans/ (only those are signed), or has control characters', () => {
    for (const plan of ['extra/p.toml', 'plans/p.txt', 'SHA256SUMS', 'plans/a\u001b[2J.toml'])
      expect(only(`[[targets]]\nname = "a"\nselector = {}\nplan = ${JSON.stringify(plan)}\n`), plan).toEqual([
        { code: 'KS_FLEET_PLAN_PATH', path: 'targets[0].plan', line: 4 },
      ]);
    expect(parsed('[[targets]]\nname = "a"\nselector = {}\nplan = "./plans//a.toml"\n').diagnostics).toEqual([]);
  });

  it('TOML that does not parse', () => {
    expect(only('[[targets]\n')[0]).toMatchObject({ code: 'KS_TOML_SYNTAX', line: 1 });
  });
});

describe('device labels from the command line', () => {
  it('parses KEY=VALUE, prefixes and empty values', () => {
    expect(parseLabelArg('hw=pi4')).toEqual(['hw', 'pi4']);
    expect(parseLabelArg('acme.com/rack=r-12')).toEqual(['acme.com/rack', 'r-12']);
    expect(parseLabelArg('spare=')).toEqual(['spare', '']);
    expect(labelsFromArgs(['hw=pi4', 'region=eu', 'hw=pi4'])).toEqual({ hw: 'pi4', region: 'eu' });
    expect(formatLabels({ region: 'eu', hw: 'pi4' })).toBe('hw=pi4, region=eu');
    expect(formatLabels({})).toBe('no labels');
  });

  it('refuses what is not one label, and one key with two values', () => {
    for (const bad of ['hw', '=x', 'hw=pi 4', '-hw=x', 'hw=x-', 'a/b/=x', `${'k'.repeat(64)}=x`])
      expect(() => parseLabelArg(bad), bad).toThrow(/--label/);
    expect(() => labelsFromArgs(['hw=pi4', 'hw=pi5'])).toThrow(/given twice/);
    // Keys that every object inherits are labels like any other.
    expect(labelsFromArgs(['constructor=x', 'toString=y'])).toEqual({ constructor: 'x', toString: 'y' });
    expect(deviceNameProblem('edge-7.example.com')).toBeUndefined();
    for (const bad of ['', 'edge 7', 'edge\u001b7', 'x'.repeat(254)]) expect(deviceNameProblem(bad), bad).toBeDefined();
  });
});

describe("a target's maintenance window (SPEC §19)", () => {
  const withWindow = (w: string) =>
    `[[targets]]\nname = "tills"\nselector = {}\nplan = "plans/a.toml"\nwindow = ${w}\n`;

  it('parses into minutes, days and a zone; one that runs past midnight is kept as given; a whole day', () => {
    const f = fleetOf(
      withWindow('{ days = ["sat", "sun"], from = "22:00", to = "04:00", timezone = "Europe/Berlin" }'),
    );
    expect(f.targets[0]!.window).toEqual({
      days: ['sat', 'sun'],
      from: 22 * 60,
      to: 4 * 60,
      timezone: 'Europe/Berlin',
    });
    // A whole day: 00:00 to 24:00.
    expect(
      fleetOf(withWindow('{ days = ["mon"], from = "00:00", to = "24:00", timezone = "UTC" }')).targets[0]!.window,
    ).toEqual({ days: ['mon'], from: 0, to: 24 * 60, timezone: 'UTC' });
  });

  it.each([
    ['{ days = [], from = "02:00", to = "04:00", timezone = "UTC" }', 'targets[0].window.days', /names no day/],
    [
      '{ days = ["monday"], from = "02:00", to = "04:00", timezone = "UTC" }',
      'targets[0].window.days',
      /"monday" is not a day: use sun, mon/,
    ],
    [
      '{ days = ["mon"], from = "2:00", to = "04:00", timezone = "UTC" }',
      'targets[0].window.from',
      /"2:00" is not a time of day/,
    ],
    [
      '{ days = ["mon"], from = "02:00", to = "25:00", timezone = "UTC" }',
      'targets[0].window.to',
      /"25:00" is not a time of day/,
    ],
    [
      '{ days = ["mon"], from = "02:00", to = "02:00", timezone = "UTC" }',
      'targets[0].window.to',
      /ends when it begins/,
    ],
    [
      '{ days = ["mon"], from = "02:00", to = "04:00", timezone = "Mars/Olympus" }',
      'targets[0].window.timezone',
      /"Mars\/Olympus" is not a timezone/,
    ],
  ])('refuses %s, naming the key and the line', (w, path, message) => {
    const p = parsed(withWindow(w));
    expect(p.fleet).toBeUndefined();
    expect(p.diagnostics).toHaveLength(1);
    expect(p.diagnostics[0]).toMatchObject({ file: 'fleet.toml', path, line: 5 });
    expect(p.diagnostics[0]!.message).toMatch(message);
  });
});
