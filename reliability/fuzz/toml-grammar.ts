// TOML documents built from a format's own tables, keys and typical values (and their near misses), so that generated
// inputs get past the TOML parser into the schema and the cross-field rules.
import fc from 'fast-check';
import { text } from './fuzz-target.js';

const str = (s: string) => JSON.stringify(s);

/** Values every Keystone TOML format uses, valid and nearly so; strings are quoted, other TOML types are not. */
const VALUES: readonly string[] = [
  ...[
    'com.acme.web',
    'com.acme.api',
    'Com..acme',
    'a',
    '1.2.3',
    '1.2',
    '^1.0.0',
    '>=1 <2',
    'x.y.z',
    '10s',
    '0s',
    '5m',
    '1h30m',
    '-1s',
    '10x',
    '300ms',
    '1e3s',
  ].map(str),
  ...[
    'http://127.0.0.1:8080/health',
    'https://h/x',
    'tcp://127.0.0.1:1',
    'tcp://h',
    'cmd:true',
    'cmd:',
    'ftp://x',
    'http://127.0.0.1:{{config.port}}/health',
    '{{config.port}}',
    '{{deps.api.exports.url}}',
    '{{config.',
    '{{ }}',
    '{{config.a.b}}',
  ].map(str),
  ...[
    'process',
    'container',
    'always',
    'never',
    'on-failure',
    'stop-first',
    'start-first',
    'auto',
    'docker',
    'hard',
    'ordering',
    'bridge',
    'host',
    'container:x',
  ].map(str),
  ...[
    'recipes/com.acme.api.toml',
    'recipes/com.acme.web.toml',
    'recipes/missing.toml',
    '../outside.toml',
    '/etc/passwd',
    'plans/edge.toml',
    'recipes/./com.acme.api.toml',
    '',
  ].map(str),
  ...[
    'user',
    'user:group',
    '0:0',
    '2147483647',
    'CAP_NET_ADMIN',
    'CAP_NOPE',
    '/dev/ttyUSB0',
    '/srv',
    'file:///srv/a.tar',
    'https://h/a.zip',
    'a'.repeat(64),
    'g'.repeat(64),
  ].map(str),
  '0',
  '1',
  '-1',
  '65535',
  '65536',
  '3',
  '1.5',
  'inf',
  'nan',
  'true',
  'false',
  '1979-05-27T07:32:00Z',
  '[]',
  '{}',
  '["a", "b"]',
  '[1, "x"]',
  '{ role = "gateway" }',
  '{ a = { b = 1 } }',
  '"""\nmulti\n"""',
  "'lit'",
  '"\\u0000"',
  '"\\uD800"',
  '',
  '=',
  '"unterminated',
  '[',
  '9999999999999999999999',
];

export interface TomlGrammar {
  /** Table headers: `metadata`, `[components]` (an array of tables), `lifecycle.run.health`. */
  tables: readonly string[];
  /** Keys, dotted where the format nests them (`selector.role`). */
  keys: readonly string[];
  /** Values of this format beyond the shared ones. */
  values?: readonly string[];
}

/** `metadata` → `[metadata]`; `[components]` → `[[components]]`, an array of tables. */
const header = (t: string) => `[${t}]`;

export function tomlDocuments(g: TomlGrammar): fc.Arbitrary<Uint8Array> {
  const value = fc.oneof(
    { arbitrary: fc.constantFrom(...VALUES, ...(g.values ?? [])), weight: 6 },
    { arbitrary: fc.string({ maxLength: 12 }).map(str), weight: 1 },
    { arbitrary: fc.integer().map(String), weight: 1 },
  );
  const pair = fc.tuple(fc.constantFrom(...g.keys), value).map(([k, v]) => `${k} = ${v}`);
  const block = fc.tuple(
    fc.option(fc.constantFrom(...g.tables), { nil: undefined }),
    fc.array(pair, { maxLength: 5 }),
    fc.constantFrom('', '# comment', ' ', '\r'),
  );
  return fc
    .array(block, { minLength: 1, maxLength: 8 })
    .map((blocks) =>
      text(
        blocks
          .map(([t, pairs, noise]) => [...(t === undefined ? [] : [header(t)]), ...pairs, noise].join('\n'))
          .join('\n') + '\n',
      ),
    );
}
