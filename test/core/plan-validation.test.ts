// Every plan validation rule of SPEC §3, table-driven: a valid base plan with one thing changed, and the
// exact diagnostics (code, rendered TOML path, line) it must produce.
import { describe, it, expect } from 'vitest';
import { CODES, sortDiagnostics, type ErrorCode } from '../../src/core/errors.js';
import { parsePlan, recipePathOf } from '../../src/core/plan.js';

const FILE = 'plans/edge.toml';

// Line n is the array index + 1; a blank line belongs to the entry above it.
const PLAN = [
  '# a valid plan', // 1 (top level)
  '[[components]]', // 2
  'name = "influxdb"', // 3
  'recipe = "recipes/com.acme.influxdb.toml"', // 4
  '', // 5 (components[0])
  '[[components]]', // 6
  'name = "api"', // 7
  'recipe = "recipes/com.acme.api.toml"', // 8
  '', // 9 (components[1])
  '[[components]]', // 10
  'name = "web"', // 11
  'recipe = "recipes/com.acme.web.toml"', // 12
  '', // 13 (components[2]); appended lines start at 14
];

function edit(changes: Record<number, string>, ...appended: string[]): string {
  const lines = [...PLAN];
  for (const [key, text] of Object.entries(changes)) {
    const n = Number(key);
    if (!(n >= 1 && n <= lines.length) || text.includes('\n')) throw new Error(`bad edit of line ${key}`);
    lines[n - 1] = text;
  }
  return [...lines, ...appended].join('\n');
}

interface Expected {
  code: ErrorCode;
  path: string;
  line: number | undefined;
  message?: RegExp;
  hint?: RegExp | string;
}

const d = (
  code: ErrorCode,
  path: string,
  line: number | undefined,
  more: Partial<Pick<Expected, 'message' | 'hint'>> = {},
): Expected => ({ code, path, line, ...more });

interface Row {
  name: string;
  toml: string;
  expected: Expected[];
}

function runRows(rows: readonly Row[]): void {
  it.each(rows.map((r) => [r.name, r] as const))('%s', (_name, row) => {
    const result = parsePlan(FILE, row.toml);
    const got = sortDiagnostics(result.diagnostics);
    expect(got.map((g) => ({ code: g.code, path: g.path, line: g.line }))).toEqual(
      row.expected.map((e) => ({ code: e.code, path: e.path, line: e.line })),
    );
    for (const [i, e] of row.expected.entries()) {
      const g = got[i]!;
      expect(g.file).toBe(FILE);
      if (e.message) expect(g.message).toMatch(e.message);
      if (typeof e.hint === 'string') expect(g.hint).toBe(e.hint);
      else if (e.hint) expect(g.hint).toMatch(e.hint);
    }
    expect(result.plan).toBeUndefined();
  });
}

describe('valid plans', () => {
  it('the base plan parses, in plan order, and every entry is readable', () => {
    const r = parsePlan(FILE, edit({}));
    expect(r.diagnostics).toEqual([]);
    expect(r.plan).toEqual({
      components: [
        { name: 'influxdb', recipe: 'recipes/com.acme.influxdb.toml' },
        { name: 'api', recipe: 'recipes/com.acme.api.toml' },
        { name: 'web', recipe: 'recipes/com.acme.web.toml' },
      ],
    });
    expect(r.readableEntries.map((e) => [e.index, e.entry.name])).toEqual([
      [0, 'influxdb'],
      [1, 'api'],
      [2, 'web'],
    ]);
  });

  it('an empty plan has no components', () => {
    const r = parsePlan(FILE, '# nothing to run\n');
    expect(r.diagnostics).toEqual([]);
    expect(r.plan).toEqual({ components: [] });
  });

  it.each(['api-2', 'api_v2', 'web.1', 'API', '0', 'a'.repeat(63)])('component name %s is accepted', (name) => {
    expect(parsePlan(FILE, edit({ 7: `name = "${name}"` })).diagnostics).toEqual([]);
  });

  it.each([
    ['./recipes/com.acme.api.toml', 'recipes/com.acme.api.toml'],
    ['recipes/../recipes/com.acme.api.toml', 'recipes/com.acme.api.toml'],
    ['recipes//com.acme.api.toml', 'recipes/com.acme.api.toml'],
    ['com.acme.api.toml', 'com.acme.api.toml'],
  ])('recipe path %s stays inside and normalises to %s', (recipe, normal) => {
    const r = parsePlan(FILE, edit({ 8: `recipe = "${recipe}"` }));
    expect(r.diagnostics).toEqual([]);
    expect(recipePathOf(r.plan!.components[1]!)).toBe(normal);
  });
});

describe('unknown keys', () => {
  runRows([
    {
      name: 'top level',
      toml: edit({ 1: 'device = "edge-1"' }),
      expected: [
        d(CODES.UNKNOWN_KEY, 'device', 1, { message: /unknown key "device"/, hint: 'known keys: components' }),
      ],
    },
    {
      name: 'a misspelt [[component]] table',
      toml: edit({}, '[[component]]', 'name = "x"', 'recipe = "recipes/x.toml"'),
      expected: [d(CODES.UNKNOWN_KEY, 'component', 14, { hint: 'did you mean "components"?' })],
    },
    {
      name: 'in components[0], a typo',
      toml: edit({ 5: 'recipie = "recipes/x.toml"' }),
      expected: [d(CODES.UNKNOWN_KEY, 'components[0].recipie', 5, { hint: 'did you mean "recipe"?' })],
    },
    {
      name: 'in components[1]',
      toml: edit({ 9: 'enabled = false' }),
      expected: [d(CODES.UNKNOWN_KEY, 'components[1].enabled', 9, { hint: 'known keys: name, recipe, config' })],
    },
    {
      name: 'a sub-table of components[2]',
      toml: edit({}, '[components.env]', 'A = "1"'),
      expected: [d(CODES.UNKNOWN_KEY, 'components[2].env', 14)],
    },
  ]);
});

describe('duplicate component names', () => {
  runRows([
    {
      name: "the second declaration is reported, and the hint names the first one's line",
      toml: edit({ 11: 'name = "influxdb"' }),
      expected: [
        d(CODES.DUPLICATE_COMPONENT, 'components[2].name', 11, {
          message: /^component "influxdb" is declared twice$/,
          hint: 'first declared at components[0] (line 3)',
        }),
      ],
    },
    {
      name: 'three declarations: both later ones point at the first',
      toml: edit({ 7: 'name = "web"' }, '[[components]]', 'name = "web"', 'recipe = "recipes/other.toml"'),
      expected: [
        d(CODES.DUPLICATE_COMPONENT, 'components[2].name', 11, { hint: 'first declared at components[1] (line 7)' }),
        d(CODES.DUPLICATE_COMPONENT, 'components[3].name', 15, { hint: 'first declared at components[1] (line 7)' }),
      ],
    },
    {
      name: 'a duplicate in inline-table form',
      toml: [
        'components = [',
        '  { name = "a", recipe = "recipes/a.toml" },',
        '  { name = "b", recipe = "recipes/b.toml" },',
        '  { name = "a", recipe = "recipes/c.toml" },',
        ']',
      ].join('\n'),
      expected: [
        d(CODES.DUPLICATE_COMPONENT, 'components[2].name', 4, { hint: 'first declared at components[0] (line 2)' }),
      ],
    },
  ]);

  it('names differing only in case are different components', () => {
    expect(parsePlan(FILE, edit({ 7: 'name = "Influxdb"' })).diagnostics).toEqual([]);
  });
});

describe('component names', () => {
  runRows(
    ['my api', 'edge/api', '.api', 'a..b', 'a'.repeat(64), '', '-api', 'api!', 'ä'].map((name) => ({
      name: JSON.stringify(name.length > 20 ? `${name.slice(0, 8)}…(${name.length})` : name),
      toml: edit({ 7: `name = "${name}"` }),
      expected: [
        d(CODES.BAD_NAME, 'components[1].name', 7, {
          message: /is not a valid component name/,
          hint: /at most 63 characters/,
        }),
      ],
    })),
  );
});

describe('recipe paths escaping the repository', () => {
  runRows(
    [
      '../x.toml',
      '/etc/passwd',
      'recipes/../../x.toml',
      '..',
      '../../../../etc/shadow',
      'recipes\\\\..\\\\..\\\\x.toml',
    ].map((recipe) => ({
      name: JSON.stringify(recipe),
      toml: edit({ 8: `recipe = "${recipe}"` }),
      expected: [
        d(CODES.PATH_ESCAPE, 'components[1].recipe', 8, {
          message: /points outside the repository/,
          hint: 'recipe paths are relative to the repository root',
        }),
      ],
    })),
  );

  it('an escaping entry is not readable; the others still are', () => {
    const r = parsePlan(FILE, edit({ 8: 'recipe = "../x.toml"' }));
    expect(r.readableEntries.map((e) => e.index)).toEqual([0, 2]);
  });
});

describe('missing keys and wrong types', () => {
  runRows([
    {
      name: 'missing name (located at the entry)',
      toml: edit({ 7: '' }),
      expected: [d(CODES.MISSING_FIELD, 'components[1].name', 6, { message: /^missing required key "name"$/ })],
    },
    {
      name: 'missing recipe (located at the entry)',
      toml: edit({ 8: '' }),
      expected: [d(CODES.MISSING_FIELD, 'components[1].recipe', 6, { message: /"recipe"/ })],
    },
    {
      name: 'an empty recipe path',
      toml: edit({ 8: 'recipe = ""' }),
      expected: [d(CODES.INVALID_VALUE, 'components[1].recipe', 8, { message: /must not be empty/ })],
    },
    {
      name: 'a name that is not a string',
      toml: edit({ 7: 'name = 42' }),
      expected: [d(CODES.INVALID_TYPE, 'components[1].name', 7, { message: /^expected a string, got integer 42$/ })],
    },
    {
      name: 'a recipe that is a list',
      toml: edit({ 8: 'recipe = ["a.toml"]' }),
      expected: [d(CODES.INVALID_TYPE, 'components[1].recipe', 8)],
    },
    {
      name: 'components as a table',
      toml: '[components]\nname = "x"\nrecipe = "recipes/x.toml"\n',
      expected: [d(CODES.INVALID_TYPE, 'components', 1, { message: /expected an array, got a table/ })],
    },
    {
      name: 'components as a string',
      toml: 'components = "influxdb"\n',
      expected: [d(CODES.INVALID_TYPE, 'components', 1)],
    },
    {
      name: 'a TOML syntax error',
      toml: edit({ 7: 'name = "api' }),
      expected: [d(CODES.TOML_SYNTAX, '', 7, { message: /^invalid TOML: / })],
    },
  ]);

  it('a missing name leaves the entry readable under a placeholder, so its recipe is still checked', () => {
    const r = parsePlan(FILE, edit({ 7: '' }));
    expect(r.readableEntries.map((e) => [e.index, e.entry.name, e.entry.recipe])).toContainEqual([
      1,
      'components[1]',
      'recipes/com.acme.api.toml',
    ]);
  });
});

describe('several errors in one plan', () => {
  it('are all reported at once', () => {
    const toml = edit(
      { 1: 'device = "x"', 7: 'name = "influxdb"', 8: 'recipe = "../api.toml"', 11: 'name = "web/1"' },
      '[[components]]',
      'recipe = "recipes/x.toml"',
    );
    const r = parsePlan(FILE, toml);
    expect(sortDiagnostics(r.diagnostics).map((x) => [x.code, x.path, x.line])).toEqual([
      [CODES.UNKNOWN_KEY, 'device', 1],
      [CODES.DUPLICATE_COMPONENT, 'components[1].name', 7],
      [CODES.PATH_ESCAPE, 'components[1].recipe', 8],
      [CODES.BAD_NAME, 'components[2].name', 11],
      [CODES.MISSING_FIELD, 'components[3].name', 14],
    ]);
    expect(r.plan).toBeUndefined();
    // The entries whose recipe can still be read: all but the escaping one.
    expect(r.readableEntries.map((e) => e.index)).toEqual([0, 2, 3]);
  });
});
