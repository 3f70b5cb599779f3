import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parse } from 'smol-toml';
import { formatTomlPath } from '../../src/core/format-toml-path.js';
import { locateToml, type TomlPath } from '../../src/core/toml-locate.js';

// Each case is a document given line by line, so the expected line numbers can be read off the array index + 1.
interface Case {
  name: string;
  toml: string[];
  exact: Array<[TomlPath, number | undefined]>;
}

const cases: Case[] = [
  {
    name: 'top-level keys and table headers',
    toml: [
      'title = "x"', // 1
      '', // 2
      '[lifecycle.run]', // 3
      'cmd = "a"', // 4
      '[lifecycle.run.health]', // 5
      'interval = "5s"', // 6
    ],
    exact: [
      [['title'], 1],
      [['lifecycle'], 3],
      [['lifecycle', 'run'], 3],
      [['lifecycle', 'run', 'cmd'], 4],
      [['lifecycle', 'run', 'health'], 5],
      [['lifecycle', 'run', 'health', 'interval'], 6],
      [['lifecycle', 'run', 'health', 'timeout'], undefined],
      [[], undefined],
    ],
  },
  {
    name: 'arrays of tables count their elements',
    toml: ['[[dependencies]]', 'name = "a"', '', '[[dependencies]]', 'name = "b"', 'type = "hard"'],
    exact: [
      [['dependencies'], 1],
      [['dependencies', 0], 1],
      [['dependencies', 0, 'name'], 2],
      [['dependencies', 1], 4],
      [['dependencies', 1, 'name'], 5],
      [['dependencies', 1, 'type'], 6],
      [['dependencies', 2], undefined],
      [['dependencies', 'name'], undefined],
    ],
  },
  {
    name: 'nested array of tables under a table',
    toml: [
      '[lifecycle.run.container]', // 1
      'image = "x"', // 2
      '[[lifecycle.run.container.ports]]', // 3
      'host_port = 1', // 4
      '[[lifecycle.run.container.ports]]', // 5
      'host_port = 2', // 6
      '[lifecycle.run.container.resources]', // 7
      'memory_mb = 64', // 8
    ],
    exact: [
      [['lifecycle', 'run', 'container', 'image'], 2],
      [['lifecycle', 'run', 'container', 'ports'], 3],
      [['lifecycle', 'run', 'container', 'ports', 0, 'host_port'], 4],
      [['lifecycle', 'run', 'container', 'ports', 1], 5],
      [['lifecycle', 'run', 'container', 'ports', 1, 'host_port'], 6],
      [['lifecycle', 'run', 'container', 'resources', 'memory_mb'], 8],
    ],
  },
  {
    name: '[[a.b]] and [a.c] belong to the last [[a]] element',
    toml: ['[[a]]', 'x = 1', '[[a]]', '[[a.b]]', 'y = 1', '[[a.b]]', '[a.c]', 'z = 1', '[[a]]', 'x = 3'],
    exact: [
      [['a', 0, 'x'], 2],
      [['a', 0, 'b'], undefined],
      [['a', 1], 3],
      [['a', 1, 'b'], 4],
      [['a', 1, 'b', 0], 4],
      [['a', 1, 'b', 0, 'y'], 5],
      [['a', 1, 'b', 1], 6],
      [['a', 1, 'c'], 7],
      [['a', 1, 'c', 'z'], 8],
      [['a', 2, 'x'], 10],
    ],
  },
  {
    name: 'the TOML spec fruits example',
    toml: [
      '[[fruits]]',
      'name = "apple"',
      '[fruits.physical]  # subtable',
      'color = "red"',
      '[[fruits.varieties]]  # nested array of tables',
      'name = "red delicious"',
      '[[fruits.varieties]]',
      'name = "granny smith"',
      '[[fruits]]',
      'name = "banana"',
      '[[fruits.varieties]]',
      'name = "plantain"',
    ],
    exact: [
      [['fruits', 0, 'physical', 'color'], 4],
      [['fruits', 0, 'varieties', 1, 'name'], 8],
      [['fruits', 1], 9],
      [['fruits', 1, 'varieties', 0], 11],
      [['fruits', 1, 'varieties', 0, 'name'], 12],
      [['fruits', 1, 'varieties', 1], undefined],
    ],
  },
  {
    name: 'dotted keys define every prefix on their line',
    toml: [
      'a.b.c = 1',
      '[fruit]',
      'apple.color = "red"',
      'apple.taste.sweet = true',
      '[fruit.apple.texture]',
      'smooth = true',
    ],
    exact: [
      [['a'], 1],
      [['a', 'b'], 1],
      [['a', 'b', 'c'], 1],
      [['fruit', 'apple'], 3],
      [['fruit', 'apple', 'color'], 3],
      [['fruit', 'apple', 'taste'], 4],
      [['fruit', 'apple', 'taste', 'sweet'], 4],
      [['fruit', 'apple', 'texture'], 5],
      [['fruit', 'apple', 'texture', 'smooth'], 6],
    ],
  },
  {
    name: 'implicitly defined tables keep the line of their first mention',
    toml: ['[x.y.z]', 'k = 1', '[x]', 'k = 2', '[x.w]'],
    exact: [
      [['x'], 1],
      [['x', 'y'], 1],
      [['x', 'y', 'z', 'k'], 2],
      [['x', 'k'], 4],
      [['x', 'w'], 5],
    ],
  },
  {
    name: 'quoted keys, escapes and whitespace around dots',
    toml: [
      '"a.b" = 1', // 1
      "'c=d' = 2", // 2
      '"e#f" = 3', // 3
      '"" = 4', // 4
      String.raw`"\u0041\x42\t\e\U0001F600" = 5`, // 5 (\x and \e are TOML 1.1, which smol-toml accepts)
      String.raw`'\n' = 6`, // 6
      String.raw`"q\"[x]" = 7`, // 7
      'site . "google.com" . \'x.y\' = true', // 8
      '[ dog . "tater.man" ]', // 9
      'type.name = "pug"', // 10
      '[ "j\\"k" . \'[l]\' ]', // 11
      '"__proto__" = 1', // 12
    ],
    exact: [
      [['a.b'], 1],
      [['a'], undefined],
      [['c=d'], 2],
      [['e#f'], 3],
      [[''], 4],
      [['AB\t\x1b😀'], 5],
      [['\\n'], 6],
      [['dog', 'q"[x]'], undefined],
      [['site', 'google.com', 'x.y'], 8],
      [['dog', 'tater.man'], 9],
      [['dog', 'tater.man', 'type', 'name'], 10],
      [['j"k', '[l]'], 11],
      [['j"k', '[l]', '__proto__'], 12],
    ],
  },
  {
    name: 'comments anywhere',
    toml: [
      '# [fake] header = "in a comment"', // 1
      'key = 1 # trailing = [x]', // 2
      '  # indented comment', // 3
      '[t] # [[u]]', // 4
      '#k = 1', // 5
      'arr = [ # opening comment ]', // 6
      '  1, # one ]', // 7
      '  # [between]', // 8
      '  2', // 9
      '] # closing', // 10
      'after = 1', // 11
    ],
    exact: [
      [['fake'], undefined],
      [['key'], 2],
      [['trailing'], undefined],
      [['t'], 4],
      [['u'], undefined],
      [['t', 'k'], undefined],
      [['t', 'arr'], 6],
      [['t', 'arr', 0], 7],
      [['t', 'arr', 1], 9],
      [['t', 'after'], 11],
    ],
  },
  {
    name: 'inline tables',
    toml: [
      '[lifecycle.run.exec]',
      'env = { KEY = "v", "MY.KEY" = 2, nested = { a = [1, {b = 2}] }, d.e = 3, s = "}" }',
      'empty = {}',
    ],
    exact: [
      [['lifecycle', 'run', 'exec', 'env'], 2],
      [['lifecycle', 'run', 'exec', 'env', 'KEY'], 2],
      [['lifecycle', 'run', 'exec', 'env', 'MY.KEY'], 2],
      [['lifecycle', 'run', 'exec', 'env', 'nested', 'a', 1, 'b'], 2],
      [['lifecycle', 'run', 'exec', 'env', 'd', 'e'], 2],
      [['lifecycle', 'run', 'exec', 'env', 's'], 2],
      [['lifecycle', 'run', 'exec', 'empty'], 3],
    ],
  },
  {
    name: 'multi-line arrays and arrays of inline tables',
    toml: [
      'ports = [', // 1
      '  {host_port = 1},', // 2
      '  {host_port = 2, proto = "udp"},', // 3
      ']', // 4
      'matrix = [[1, 2],', // 5
      '  [3, "]",', // 6
      '   4], "[", [ ] ]', // 7
      'next = 1', // 8
    ],
    exact: [
      [['ports'], 1],
      [['ports', 0], 2],
      [['ports', 0, 'host_port'], 2],
      [['ports', 1], 3],
      [['ports', 1, 'proto'], 3],
      [['ports', 2], undefined],
      [['matrix', 0], 5],
      [['matrix', 0, 1], 5],
      [['matrix', 1], 6],
      [['matrix', 1, 1], 6],
      [['matrix', 1, 2], 7],
      [['matrix', 2], 7],
      [['matrix', 3], 7],
      [['next'], 8],
    ],
  },
  {
    name: 'strings containing brackets, braces, hashes, equals and quotes',
    toml: [
      String.raw`a = "[not] {a header} # = \" ' \\"`, // 1
      `b = '[x] "q" # = {'`, // 2
      String.raw`c = ["]", '[', "\"],", "#"]`, // 3
      String.raw`[t]`, // 4
      String.raw`d = "\\"`, // 5
      String.raw`e = { k = "}", l = '{' }`, // 6
    ],
    exact: [
      [['a'], 1],
      [['b'], 2],
      [['c', 3], 3],
      [['c', 4], undefined],
      [['t', 'd'], 5],
      [['t', 'e', 'l'], 6],
      [['not'], undefined],
    ],
  },
  {
    name: 'multi-line strings are skipped whole',
    toml: [
      's = """', // 1
      '[fake.header]', // 2
      'k = 1', // 3
      String.raw`\""" still inside`, // 4
      '"""', // 5
      "l = '''", // 6
      '[[fake]]', // 7
      'x = """', // 8
      "'''", // 9
      'after = 1', // 10
      'q = """ends with quotes"""""', // 11
      "r = '''it's''''", // 12
      'm = """\\', // 13
      '  [y] \\', // 14
      '  """', // 15
      't = ["""', // 16
      ']""", \'\'\'', // 17
      "z = 1'''] # done", // 18
      'u = 1', // 19
    ],
    exact: [
      [['s'], 1],
      [['fake'], undefined],
      [['k'], undefined],
      [['l'], 6],
      [['x'], undefined],
      [['after'], 10],
      [['q'], 11],
      [['r'], 12],
      [['m'], 13],
      [['y'], undefined],
      [['t', 0], 16],
      [['t', 1], 17],
      [['z'], undefined],
      [['u'], 19],
    ],
  },
  {
    name: 'other scalars, including date-times with a space',
    toml: [
      'd = 1979-05-27 07:32:00Z',
      'n = [ -1_000, +inf, nan, 0x1F, 1e10, true,',
      '  1979-05-27 ]',
      '[t]',
      'k = 07:32:00',
    ],
    exact: [
      [['d'], 1],
      [['n', 5], 2],
      [['n', 6], 3],
      [['t', 'k'], 5],
    ],
  },
  {
    name: 'CRLF line endings and indentation',
    toml: ['a = 1\r', '  [t]\r', '\tk = """x\r', 'y"""\r', '  [[t.u]]\r', '  v = 2'],
    exact: [
      [['a'], 1],
      [['t'], 2],
      [['t', 'k'], 3],
      [['t', 'u', 0], 5],
      [['t', 'u', 0, 'v'], 6],
    ],
  },
];

describe('locateToml: exact()', () => {
  it.each(cases)('$name', ({ toml, exact }) => {
    const text = toml.join('\n');
    // Only valid TOML is ever located; make sure each fixture is.
    expect(() => parse(text)).not.toThrow();
    const loc = locateToml(text);
    for (const [path, line] of exact)
      expect([formatTomlPath(path), loc.exact(path)]).toEqual([formatTomlPath(path), line]);
  });
});

describe('locateToml: line() falls back to the nearest ancestor', () => {
  const text = [
    '[metadata]', // 1
    'name = "x"', // 2
    '[lifecycle.run.health]', // 3
    'interval = "1s"', // 4
    '[[dependencies]]', // 5
    'name = "a"', // 6
    'env = { A = "1" }', // 7
  ].join('\n');
  const loc = locateToml(text);
  it.each<[TomlPath, number | undefined]>([
    [['metadata', 'name'], 2],
    [['metadata', 'version'], 1],
    [['lifecycle', 'run', 'health', 'timeout'], 3],
    [['lifecycle', 'run', 'restart_policy'], 3],
    [['lifecycle', 'run', 'health', 'interval', 'extra'], 4],
    [['dependencies', 0, 'type'], 5],
    [['dependencies', 3, 'name'], 5],
    [['dependencies', 0, 'env', 'B'], 7],
    [['dependencies', 0, 'env', 'A'], 7],
    [['metadata', 0], 1],
    [['nope', 'deeper'], undefined],
    [[], undefined],
  ])('%j -> %s', (path, line) => {
    expect(loc.line(path)).toBe(line);
  });
});

describe('formatTomlPath', () => {
  it.each<[TomlPath, string]>([
    [[], ''],
    [['lifecycle', 'run', 'health', 'interval'], 'lifecycle.run.health.interval'],
    [['artifacts', 0, 'sha256'], 'artifacts[0].sha256'],
    [['lifecycle', 'run', 'exec', 'env', 'MY.KEY'], 'lifecycle.run.exec.env."MY.KEY"'],
    [['a-b_C9'], 'a-b_C9'],
    [['matrix', 1, 2], 'matrix[1][2]'],
    [[0, 'a'], '[0].a'],
    [[''], '""'],
    [['say "hi"', 'x'], '"say \\"hi\\"".x'],
    [['tab\there'], '"tab\\there"'],
    [['é'], '"é"'],
    [['a b', 0], '"a b"[0]'],
  ])('%j -> %s', (path, rendered) => {
    expect(formatTomlPath(path)).toBe(rendered);
  });
});

// ---------------------------------------------------------------------------------------------
// Property: generate a document model, serialise it to TOML while recording the line of every
// path, and check that the locator agrees (and that smol-toml accepts the document).

interface Key {
  name: string;
  /** 0 bare when possible, 1 basic-quoted, 2 literal-quoted when possible, 3 basic with every char escaped. */
  style: 0 | 1 | 2 | 3;
}
type Val =
  | { kind: 'scalar'; src: string }
  | { kind: 'array'; items: Val[]; multiline: boolean }
  | { kind: 'inline'; entries: Array<{ key: Key; val: Val }> };
/** 0 none, 1 blank line before, 2 comment line before, 3 trailing comment. */
type Noise = 0 | 1 | 2 | 3;
type Member =
  | { kind: 'value'; key: Key; val: Val; noise: Noise }
  | { kind: 'dotted'; key: Key; entries: Array<{ key: Key; val: Val; noise: Noise }> }
  | { kind: 'table'; key: Key; body: Member[]; implicit: boolean; noise: Noise }
  | { kind: 'aot'; key: Key; elems: Member[][]; noise: Noise };

const SHORT_ESCAPES: Record<string, string> = { '\b': '\\b', '\n': '\\n', '\f': '\\f', '\r': '\\r' };

function escapeBasic(str: string, multiline: boolean, all = false): string {
  let out = '';
  for (const ch of str) {
    const cp = ch.codePointAt(0) ?? 0;
    if (all) out += cp > 0xffff ? `\\U${cp.toString(16).padStart(8, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
    else if (ch === '\\' || ch === '"') out += `\\${ch}`;
    else if (multiline && ch === '\n') out += ch;
    else if (SHORT_ESCAPES[ch] !== undefined && ch !== '\t') out += SHORT_ESCAPES[ch];
    else if ((cp < 0x20 && ch !== '\t') || cp === 0x7f) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return out;
}

function quoteKey({ name, style }: Key): string {
  if (style === 0 && /^[A-Za-z0-9_-]+$/.test(name)) return name;
  // Literal strings cannot hold a quote or control characters other than tab.
  const literalOk = [...name].every((ch) => ch !== "'" && (ch === '\t' || (ch >= ' ' && ch !== '\x7f')));
  if (style === 2 && literalOk) return `'${name}'`;
  return `"${escapeBasic(name, false, style === 3)}"`;
}

const keyArb: fc.Arbitrary<Key> = fc.record({
  name: fc.oneof(
    fc.constantFrom('name', 'a', 'b', 'ports', '0', '1', 'x-y', '__proto__', 'constructor', ''),
    fc
      .array(
        fc.constantFrom(
          'a',
          'z',
          '0',
          '_',
          '-',
          '.',
          '=',
          '#',
          '"',
          "'",
          ' ',
          '[',
          ']',
          '{',
          '}',
          '\\',
          'é',
          '\t',
          '\n',
          '\x1b',
          '\u0001',
          '😀',
          '\u007f',
        ),
        { maxLength: 6 },
      )
      .map((cs) => cs.join('')),
  ),
  style: fc.constantFrom(0, 1, 2, 3),
});

const fragment = fc.constantFrom(
  'a',
  ' ',
  '[x]',
  '[[y]]',
  '{',
  '}',
  '#',
  '=',
  '"',
  "'",
  '\\',
  ',',
  'k = 1',
  '"""',
  "'''",
  '\t',
  'é',
);
const oneLine = fc.array(fragment, { maxLength: 6 }).map((f) => f.join(''));
const manyLines = fc
  .array(fc.oneof(fragment, fc.constant('\n'), fc.constant('\n[h]\n'), fc.constant('\nk = "v"\n')), { maxLength: 8 })
  .map((f) => f.join(''));

const scalarArb: fc.Arbitrary<Val> = fc
  .oneof(
    fc.integer().map(String),
    fc.constantFrom(
      'true',
      'false',
      '3.14',
      '-0.5e10',
      'inf',
      '-nan',
      '0x1F',
      '1_000',
      '1979-05-27T07:32:00Z',
      '1979-05-27 07:32:00',
      '1979-05-27',
      '07:32:00',
    ),
    oneLine.map((c) => `"${escapeBasic(c, false)}"`),
    oneLine.map((c) => `'${c.replaceAll("'", '').replaceAll('\t', ' ')}'`),
    // Up to two quotes may end the content right before the closing delimiter: `"""a"""""`.
    fc.tuple(manyLines, fc.constantFrom('', '"', '""')).map(([c, tail]) => `"""${escapeBasic(c, true)}${tail}"""`),
    fc.tuple(manyLines, fc.constantFrom('', "'", "''")).map(([c, tail]) => `'''\n${c.replaceAll("'", '')}${tail}'''`),
  )
  .map((src) => ({ kind: 'scalar' as const, src }));

const valArb: fc.Memo<Val> = fc.memo((depth) =>
  depth <= 1
    ? scalarArb
    : fc.oneof(
        { weight: 3, arbitrary: scalarArb },
        {
          weight: 1,
          arbitrary: fc.record({
            kind: fc.constant('array' as const),
            items: fc.array(valArb(depth - 1), { maxLength: 4 }),
            multiline: fc.boolean(),
          }),
        },
        {
          weight: 1,
          arbitrary: fc.record({
            kind: fc.constant('inline' as const),
            entries: fc.uniqueArray(fc.record({ key: keyArb, val: valArb(depth - 1) }), {
              selector: (e) => e.key.name,
              maxLength: 3,
            }),
          }),
        },
      ),
);

const noiseArb: fc.Arbitrary<Noise> = fc.constantFrom(0, 0, 1, 2, 3);

const tableArb: fc.Memo<Member[]> = fc.memo((depth) => {
  const members: Array<fc.Arbitrary<Member>> = [
    fc.record({ kind: fc.constant('value' as const), key: keyArb, val: valArb(3), noise: noiseArb }),
    fc.record({
      kind: fc.constant('dotted' as const),
      key: keyArb,
      entries: fc.uniqueArray(fc.record({ key: keyArb, val: valArb(2), noise: noiseArb }), {
        selector: (e) => e.key.name,
        minLength: 1,
        maxLength: 3,
      }),
    }),
  ];
  if (depth > 1) {
    members.push(
      fc.record({
        kind: fc.constant('table' as const),
        key: keyArb,
        body: tableArb(depth - 1),
        implicit: fc.boolean(),
        noise: noiseArb,
      }),
      fc.record({
        kind: fc.constant('aot' as const),
        key: keyArb,
        elems: fc.array(tableArb(depth - 1), { minLength: 1, maxLength: 3 }),
        noise: noiseArb,
      }),
    );
  }
  return fc.uniqueArray(fc.oneof(...members), { selector: (m) => m.key.name, maxLength: 5 });
});

/** Accumulates the document and the line every path was first mentioned on. */
class Writer {
  text = '';
  line = 1;
  readonly lines = new Map<string, { path: TomlPath; line: number }>();
  constructor(readonly spaced: boolean) {}
  w(str: string): void {
    this.text += str;
    this.line += str.split('\n').length - 1;
  }
  record(path: TomlPath): void {
    const k = JSON.stringify(path);
    if (!this.lines.has(k)) this.lines.set(k, { path, line: this.line });
  }
  before(noise: Noise): void {
    if (noise === 1) this.w('\n');
    if (noise === 2) this.w(`${this.spaced ? '  ' : ''}# [fake] k = "v" [[x]] }\n`);
  }
  after(noise: Noise): void {
    this.w(noise === 3 ? '  # } ] "x" = [y]\n' : '\n');
  }
  indent(): void {
    if (this.spaced) this.w('  ');
  }
  dotted(keys: Key[]): string {
    return keys.map(quoteKey).join(this.spaced ? ' . ' : '.');
  }
}

function writeValue(out: Writer, path: TomlPath, val: Val): void {
  if (val.kind === 'scalar') {
    out.w(val.src);
  } else if (val.kind === 'array') {
    out.w('[');
    val.items.forEach((item, idx) => {
      if (val.multiline) out.w(idx % 2 === 0 ? '\n  ' : '\n  # c ] [ {\n  ');
      const p = [...path, idx];
      out.record(p);
      writeValue(out, p, item);
      if (val.multiline || idx < val.items.length - 1) out.w(', ');
    });
    out.w(val.multiline ? '\n]' : ']');
  } else {
    out.w('{');
    val.entries.forEach(({ key, val: v }, idx) => {
      const p = [...path, key.name];
      out.record(p);
      out.w(`${idx ? ', ' : ' '}${quoteKey(key)} = `);
      writeValue(out, p, v);
    });
    out.w(val.entries.length ? ' }' : '}');
  }
}

const hasValues = (body: Member[]): boolean => body.some((m) => m.kind === 'value' || m.kind === 'dotted');

/** Writes a table body: key/values first (TOML requires it), then sub-tables and arrays of tables. */
function writeTable(out: Writer, path: TomlPath, keys: Key[], body: Member[]): void {
  for (const m of body) {
    const p = [...path, m.key.name];
    if (m.kind === 'value') {
      out.before(m.noise);
      out.indent();
      out.record(p);
      out.w(`${quoteKey(m.key)} = `);
      writeValue(out, p, m.val);
      out.after(m.noise);
    } else if (m.kind === 'dotted') {
      for (const e of m.entries) {
        out.before(e.noise);
        out.indent();
        out.record(p);
        out.record([...p, e.key.name]);
        out.w(`${out.dotted([m.key, e.key])} = `);
        writeValue(out, [...p, e.key.name], e.val);
        out.after(e.noise);
      }
    }
  }
  for (const m of body) {
    const p = [...path, m.key.name];
    const k = [...keys, m.key];
    if (m.kind === 'table') {
      // A table with only sub-tables may go without its own header: it is then defined by its first descendant's header.
      if (!(m.implicit && !hasValues(m.body) && m.body.length > 0)) header(out, p, k, m.noise, false);
      writeTable(out, p, k, m.body);
    } else if (m.kind === 'aot') {
      m.elems.forEach((el, idx) => {
        header(out, [...p, idx], k, m.noise, true);
        writeTable(out, [...p, idx], k, el);
      });
    }
  }
}

function header(out: Writer, path: TomlPath, keys: Key[], noise: Noise, isArray: boolean): void {
  out.before(noise);
  out.indent();
  // The header mentions every prefix; ones not yet defined (implicit tables) get this line.
  for (let n = 1; n <= path.length; n++) out.record(path.slice(0, n));
  const inner = out.spaced ? ` ${out.dotted(keys)} ` : out.dotted(keys);
  out.w(isArray ? `[[${inner}]]` : `[${inner}]`);
  out.after(noise);
}

function getIn(value: unknown, path: TomlPath): unknown {
  let cur = value;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, seg)) return undefined;
    cur = (cur as Record<string | number, unknown>)[seg];
  }
  return cur;
}

const docArb = fc
  .record({ body: tableArb(4), spaced: fc.boolean(), crlf: fc.boolean() })
  .map(({ body, spaced, crlf }) => {
    const out = new Writer(spaced);
    writeTable(out, [], [], body);
    return { text: crlf ? out.text.replaceAll('\n', '\r\n') : out.text, lines: [...out.lines.values()] };
  });

describe('locateToml: properties', () => {
  it('finds the recorded line of every path in generated documents', () => {
    fc.assert(
      fc.property(docArb, ({ text, lines }) => {
        const parsed = parse(text); // throws, failing the property, if the generator wrote invalid TOML
        const loc = locateToml(text);
        for (const { path, line } of lines) {
          expect(getIn(parsed, path), `${formatTomlPath(path)} in parsed document`).not.toBeUndefined();
          expect(loc.exact(path), formatTomlPath(path)).toBe(line);
          expect(loc.line(path), formatTomlPath(path)).toBe(line);
        }
      }),
      { numRuns: 300 },
    );
  });

  const tomlish = fc.string({
    unit: fc.constantFrom('[', ']', '{', '}', '"', "'", '=', '#', '.', ',', '\n', '\r', ' ', '\\', 'a', '1', 'u', 'x'),
  });

  it('never throws on arbitrary or mangled input, and only reports lines that exist', () => {
    const mangled = fc
      .tuple(docArb, fc.nat(), fc.nat(), fc.string())
      .map(([{ text }, a, b, junk]) => text.slice(0, a % (text.length + 1)) + junk + text.slice(b % (text.length + 1)));
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary' }), tomlish, mangled),
        fc.array(fc.array(fc.oneof(fc.string(), fc.nat(3), fc.integer()), { maxLength: 4 })),
        (text, paths) => {
          const loc = locateToml(text);
          const lineCount = text.split('\n').length;
          for (const path of [...paths, ['a'], ['a', 0], ['x', 'a']]) {
            for (const line of [loc.exact(path), loc.line(path)]) {
              if (line !== undefined) expect(Number.isInteger(line) && line >= 1 && line <= lineCount).toBe(true);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it.each<[string, string]>([
    ['unterminated array nesting', `a = ${'['.repeat(200_000)}`],
    ['unterminated inline tables', `a = ${'{ b = '.repeat(100_000)}`],
    ['header brackets', '['.repeat(400_000)],
    ['a very long dotted key', `${'a.'.repeat(200_000)}b = 1`],
    ['a very deep header', `[${'a.'.repeat(200_000)}b]\nc = 1`],
    ['many array-of-tables elements', '[[a]]\nb = 1\n'.repeat(50_000)],
    ['unterminated multi-line string', `a = """${'x\\\n'.repeat(100_000)}`],
    ['quotes only', '"'.repeat(400_000)],
    ['escapes in an unterminated key', `"${'\\u'.repeat(200_000)}`],
    ['lines of garbage', '=]}#\n'.repeat(100_000)],
  ])(
    'terminates on pathological input: %s',
    (_name, text) => {
      // A quadratic scan of these ~400 KB inputs would take minutes and hit the hang guard below;
      // speed itself is measured in bench/, not asserted here.
      const loc = locateToml(text);
      const line = loc.line(['a', 0, 'b']);
      expect(line === undefined || (Number.isInteger(line) && line >= 1)).toBe(true);
    },
    20_000,
  );

  it('locates deep paths in the pathological inputs', () => {
    expect(locateToml(`${'a.'.repeat(1000)}b = 1\nc = 2`).exact([...Array<string>(1000).fill('a'), 'b'])).toBe(1);
    expect(locateToml('[[a]]\nb = 1\n'.repeat(1000)).exact(['a', 999, 'b'])).toBe(2000);
  });
});
