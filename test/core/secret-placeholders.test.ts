// `{{secret.NAME}}` (SPEC §16): only in an environment variable's value, kept as written in the desired state (the value
// goes in where the component starts); refused in args, a container command, shell code, a health check and an export,
// also when a configuration value carries it there; the component's hash takes the keyed digest, never the value.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CODES } from '../../src/core/errors.js';
import type { Resolution } from '../../src/core/desired-state.js';
import { secretsRead, withSecretDigests } from '../../src/core/secret-digests.js';
import { parseTemplate } from '../../src/core/template.js';
import { loadRevision } from '../../src/load/load-revision.js';
import { MemoryReader } from '../../src/source/memory-reader.js';

const PLAN = 'plans/p.toml';
const toml = (s: string) => JSON.stringify(s);

function recipe(name: string, body: string[]): string {
  return ['[metadata]', `name = "com.acme.${name}"`, 'version = "1.0.0"', '', ...body, ''].join('\n');
}
function plan(entries: Array<{ name: string; config?: string }>): string {
  return entries
    .map(
      (e) =>
        `[[components]]\nname = "${e.name}"\nrecipe = "recipes/${e.name}.toml"\n${e.config ? `config = ${e.config}\n` : ''}`,
    )
    .join('\n');
}
async function load(files: Record<string, string>): Promise<Resolution> {
  const enc = new TextEncoder();
  return loadRevision(
    new MemoryReader(new Map(Object.entries(files).map(([p, t]) => [p, enc.encode(t)])), 'test'),
    PLAN,
  );
}
async function state(files: Record<string, string>) {
  const r = await load(files);
  if (!r.ok) throw new Error(r.diagnostics.map((d) => `${d.code} ${d.path}: ${d.message}`).join('\n'));
  return r.state;
}
async function refusal(files: Record<string, string>) {
  const r = await load(files);
  if (r.ok) throw new Error('expected the revision to be refused');
  return r.diagnostics;
}

const processWith = (lines: string[]) => recipe('app', ['[lifecycle.run.exec]', 'command = "./app"', ...lines]);

describe('{{secret.NAME}} placeholders', () => {
  it('parse as their own kind; a bad name is a syntax error naming the rule', () => {
    expect(parseTemplate('postgres://u:{{secret.db_pw}}@db').placeholders).toEqual([
      { text: 'secret.db_pw', ref: { kind: 'secret', name: 'db_pw' } },
    ]);
    expect(parseTemplate('{{ secret.a.b }}').error).toMatch(/a secret's name is letters/);
    expect(parseTemplate('{{secret.}}').error).toMatch(/a secret's name/);
  });

  it('in exec.env: kept as written, the component reads it, inputs never hold it', async () => {
    const s = await state({
      [PLAN]: plan([{ name: 'app' }]),
      'recipes/app.toml': processWith(['[lifecycle.run.exec.env]', 'DB_URL = "postgres://u:{{secret.db_pw}}@db"']),
    });
    const c = s.components[0]!;
    expect(c.recipe.lifecycle.run.exec!.env.DB_URL).toBe('postgres://u:{{secret.db_pw}}@db');
    expect(c.secrets).toEqual(['db_pw']);
    expect(c.inputs ?? {}).toEqual({});
    expect(secretsRead(s)).toEqual(['db_pw']);
  });

  it('through [config] into env: allowed, and the config input shows the placeholder, not a value', async () => {
    const s = await state({
      [PLAN]: plan([{ name: 'app', config: '{ token = "{{secret.api_token}}" }' }]),
      'recipes/app.toml': processWith([
        '[lifecycle.run.exec.env]',
        'TOKEN = "{{config.token}}"',
        '',
        '[config]',
        'token = "none"',
      ]),
    });
    const c = s.components[0]!;
    expect(c.recipe.lifecycle.run.exec!.env.TOKEN).toBe('{{secret.api_token}}');
    expect(c.secrets).toEqual(['api_token']);
  });

  it('a container env and a secret file count; a file needs no placeholder', async () => {
    const s = await state({
      [PLAN]: plan([{ name: 'app' }]),
      'recipes/app.toml': recipe('app', [
        '[lifecycle.run]',
        'type = "container"',
        '[lifecycle.run.container]',
        'image = "busybox"',
        'env = { PW = "{{secret.pw}}" }',
        '[[lifecycle.run.secrets]]',
        'name = "tls_key"',
        'path = "tls.key"',
      ]),
    });
    expect(s.components[0]!.secrets).toEqual(['pw', 'tls_key']);
  });

  it.each([
    ['args', processWith([`args = [${toml('--password={{secret.pw}}')}]`])],
    ['a health check', processWith(['[lifecycle.run.health]', `check = ${toml('cmd:test {{secret.pw}}')}`])],
    [
      'the install script',
      recipe('app', [
        '[lifecycle.install]',
        `script = ${toml('echo {{secret.pw}} > f')}`,
        '[lifecycle.run.exec]',
        'command = "./app"',
      ]),
    ],
    [
      'a container command',
      recipe('app', [
        '[lifecycle.run]',
        'type = "container"',
        '[lifecycle.run.container]',
        'image = "busybox"',
        `command = ["sh", "-c", ${toml('echo {{secret.pw}}')}]`,
      ]),
    ],
    [
      'an export',
      recipe('app', ['[exports]', `url = ${toml('{{secret.pw}}')}`, '[lifecycle.run.exec]', 'command = "./app"']),
    ],
  ])('is refused in %s, where the recipe writes it (KS_SECRET_PLACEMENT)', async (_where, text) => {
    const d = await refusal({ [PLAN]: plan([{ name: 'app' }]), 'recipes/app.toml': text });
    expect(d.map((x) => x.code)).toContain(CODES.SECRET_PLACEMENT);
    expect(d.find((x) => x.code === CODES.SECRET_PLACEMENT)!.file).toBe('recipes/app.toml');
    expect(d.find((x) => x.code === CODES.SECRET_PLACEMENT)!.line).toBeGreaterThan(0);
  });

  it.each([
    ['args', ['args = ["{{config.v}}"]']],
    ['a URL health check', ['[lifecycle.run.health]', `check = ${toml('http://127.0.0.1:8080/{{config.v}}')}`]],
  ])('is refused when a configuration value carries it into %s', async (_where, lines) => {
    const d = await refusal({
      [PLAN]: plan([{ name: 'app', config: '{ v = "{{secret.pw}}" }' }]),
      'recipes/app.toml': processWith([...lines, '', '[config]', 'v = "x"']),
    });
    expect(d.map((x) => x.code)).toContain(CODES.SECRET_PLACEMENT);
  });

  it('a configuration value cannot carry a secret out through an export', async () => {
    const d = await refusal({
      [PLAN]: plan([{ name: 'app', config: '{ v = "{{secret.pw}}" }' }]),
      'recipes/app.toml': recipe('app', [
        '[config]',
        'v = "x"',
        '[exports]',
        'url = "{{config.v}}"',
        '[lifecycle.run.exec]',
        'command = "./app"',
      ]),
    });
    expect(d.map((x) => x.code)).toContain(CODES.SECRET_PLACEMENT);
  });

  it.each(['../tls.key', 'a/b', '.', ''])(
    'a process secret file path %j is refused (KS_SECRET_FILE or a missing value)',
    async (path) => {
      const d = await refusal({
        [PLAN]: plan([{ name: 'app' }]),
        'recipes/app.toml': processWith(['[[lifecycle.run.secrets]]', 'name = "k"', `path = ${toml(path)}`]),
      });
      expect(
        d.some((x) => x.code === CODES.SECRET_FILE || x.code === CODES.INVALID_VALUE || x.code === CODES.INVALID_TYPE),
      ).toBe(true);
    },
  );

  it('two files at one path are refused', async () => {
    const d = await refusal({
      [PLAN]: plan([{ name: 'app' }]),
      'recipes/app.toml': processWith([
        '[[lifecycle.run.secrets]]',
        'name = "a"',
        'path = "k"',
        '[[lifecycle.run.secrets]]',
        'name = "b"',
        'path = "k"',
      ]),
    });
    expect(d.map((x) => x.code)).toContain(CODES.SECRET_FILE);
  });
});

describe('the hash with secret digests', () => {
  const files = (env: string) => ({
    [PLAN]: plan([{ name: 'app' }, { name: 'other' }]),
    'recipes/app.toml': processWith(['[lifecycle.run.exec.env]', `PW = ${toml(env)}`]),
    'recipes/other.toml': recipe('other', ['[lifecycle.run.exec]', 'command = "./other"']),
  });

  it('a component without secrets keeps its hash; one with: the same digest gives the same hash, another digest another', async () => {
    const s = await state(files('{{secret.pw}}'));
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[0-9a-f]{64}$/), fc.stringMatching(/^[0-9a-f]{64}$/), async (d1, d2) => {
        const a = withSecretDigests(s, new Map([['pw', d1]]));
        const b = withSecretDigests(s, new Map([['pw', d1]]));
        const c = withSecretDigests(s, new Map([['pw', d2]]));
        expect(a.components[1]).toBe(s.components[1]);
        expect(a.components[0]!.hash).toBe(b.components[0]!.hash);
        expect(a.components[0]!.hash !== c.components[0]!.hash).toBe(d1 !== d2);
        expect(a.components[0]!.secretDigests).toEqual({ pw: d1 });
      }),
      { numRuns: 50 },
    );
  });

  it('a digest missing for a secret a component reads is a programming error, not a silent hash', async () => {
    const s = await state(files('{{secret.pw}}'));
    expect(() => withSecretDigests(s, new Map())).toThrow(/no digest for secret pw/);
  });
});

describe('secrets in a composite', () => {
  it('a member reads only what its own recipe (or the configuration given to it) names', async () => {
    const s = await state({
      [PLAN]: plan([{ name: 'app' }]),
      'recipes/app.toml': recipe('app', [
        '[[members]]',
        'name = "db"',
        'recipe = "recipes/db.toml"',
        '[[members]]',
        'name = "web"',
        'recipe = "recipes/web.toml"',
        '[config.web]',
        'greeting = "hello"',
      ]),
      'recipes/db.toml': recipe('db', [
        '[lifecycle.run.exec]',
        'command = "./db"',
        'env = { PW = "{{secret.db_pw}}" }',
      ]),
      'recipes/web.toml': recipe('web', [
        '[config]',
        'greeting = "x"',
        '[lifecycle.run.exec]',
        'command = "./web"',
        'env = { G = "{{config.greeting}}" }',
      ]),
    });
    const byName = new Map(s.components.map((c) => [c.name, c]));
    expect(byName.get('app/db')!.secrets).toEqual(['db_pw']);
    expect(byName.get('app/web')!.secrets).toBeUndefined();
  });

  it("a sibling cannot get another member's secret through an export", async () => {
    const d = await refusal({
      [PLAN]: plan([{ name: 'app' }]),
      'recipes/app.toml': recipe('app', [
        '[[members]]',
        'name = "db"',
        'recipe = "recipes/db.toml"',
        '[[members]]',
        'name = "web"',
        'recipe = "recipes/web.toml"',
        '[config.db]',
        'pw = "{{secret.db_pw}}"',
      ]),
      'recipes/db.toml': recipe('db', [
        '[config]',
        'pw = "x"',
        '[exports]',
        'pw = "{{config.pw}}"',
        '[lifecycle.run.exec]',
        'command = "./db"',
      ]),
      'recipes/web.toml': recipe('web', [
        '[[dependencies]]',
        'name = "com.acme.db"',
        '[lifecycle.run.exec]',
        'command = "./web"',
        'env = { PW = "{{deps.db.exports.pw}}" }',
      ]),
    });
    expect(d.map((x) => x.code)).toContain(CODES.SECRET_PLACEMENT);
  });
});
