// The example desired-state repository (recipes/, plans/) must stay coherent: artifact digests
// match the stand-in programs on disk, and every recipe a plan names exists and satisfies its plan.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

type Table = Record<string, unknown>;
const asTable = (v: unknown): Table => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Table) : {});
const asTables = (v: unknown): Table[] => (Array.isArray(v) ? v.map(asTable) : []);
const readToml = (file: string): Table => parse(readFileSync(file, 'utf8'));
const tomlFiles = (dir: string): string[] =>
  readdirSync(join(ROOT, dir))
    .filter((f) => f.endsWith('.toml'))
    .sort()
    .map((f) => join(ROOT, dir, f));
const isRelative = (uri: string) => !/^[a-z][a-z0-9+.-]*:/i.test(uri) && !uri.startsWith('/');

const recipes = tomlFiles('recipes');
const plans = tomlFiles('plans');

describe('example recipes', () => {
  it('exist', () => {
    expect(recipes.length).toBeGreaterThan(0);
    expect(plans.length).toBeGreaterThan(0);
  });

  it.each(recipes.map((f) => [f.slice(ROOT.length), f]))(
    '%s: each relative artifact matches its sha256',
    (_name, file) => {
      for (const artifact of asTables(readToml(file).artifacts)) {
        const uri = String(artifact.uri);
        if (!isRelative(uri)) continue;
        const onDisk = resolve(dirname(file), uri);
        expect(existsSync(onDisk), `${uri} exists`).toBe(true);
        const digest = createHash('sha256').update(readFileSync(onDisk)).digest('hex');
        expect(artifact.sha256, `sha256 of ${uri} (update the recipe after editing the program)`).toBe(digest);
      }
    },
  );

  it('ship every stand-in program as a relative artifact', () => {
    const shipped = recipes.flatMap((f) =>
      asTables(readToml(f).artifacts)
        .map((a) => String(a.uri))
        .filter(isRelative)
        .map((uri) => resolve(dirname(f), uri)),
    );
    const programs = readdirSync(join(ROOT, 'artifacts')).map((f) => join(ROOT, 'artifacts', f));
    expect(new Set(shipped)).toEqual(new Set(programs));
  });
});

describe.each(plans.map((f) => [f.slice(ROOT.length), f]))('plan %s', (_name, planFile) => {
  const components = asTables(readToml(planFile).components);

  it('names recipes that exist', () => {
    expect(components.length).toBeGreaterThan(0);
    for (const c of components)
      expect(existsSync(join(ROOT, String(c.recipe))), `${String(c.recipe)} exists`).toBe(true);
  });

  it("provides every recipe's dependencies at a satisfying version", () => {
    const loaded = components
      .filter((c) => existsSync(join(ROOT, String(c.recipe))))
      .map((c) => readToml(join(ROOT, String(c.recipe))));
    const provided = new Map(
      loaded.map((r) => [String(asTable(r.metadata).name), String(asTable(r.metadata).version)]),
    );
    for (const r of loaded) {
      for (const dep of asTables(r.dependencies)) {
        const version = provided.get(String(dep.name));
        expect(version, `${String(asTable(r.metadata).name)} needs ${String(dep.name)}`).toBeDefined();
        if (typeof dep.version === 'string' && version !== undefined)
          expect(semver.satisfies(version, dep.version)).toBe(true);
      }
    }
  });
});
