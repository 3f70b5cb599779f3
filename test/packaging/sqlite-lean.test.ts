// The package's SQLite leaves out what the state store never uses (packaging/sqlite-addon-build.mjs): the defines it
// rewrites, and the check that refuses an addon that is not the lean build. The build itself is exercised by the
// package tests (test/packaging/deb-install.test.ts checks the installed addon).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ADDED, checkLean, leanDefines, LEFT_OUT } from '../../packaging/sqlite-addon-build.mjs';

const require = createRequire(import.meta.url);
const sqliteDir = dirname(require.resolve('better-sqlite3/package.json'));
const gypi = readFileSync(join(sqliteDir, 'deps', 'defines.gypi'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'keystone-sqlite-lean-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('leanDefines', () => {
  it("drops each left-out define from better-sqlite3's own list and adds SQLITE_OMIT_JSON, keeping the rest", () => {
    const lean = leanDefines(gypi);
    for (const d of LEFT_OUT) expect(lean).not.toContain(`'${d}',`);
    for (const d of ADDED) expect(lean).toContain(`'${d}',`);
    const kept = (text: string) => [...text.matchAll(/'(SQLITE_[A-Z0-9_=-]+|HAVE_[A-Z0-9_=]+)'/g)].map((m) => m[1]);
    expect(kept(lean)).toEqual([...kept(gypi).filter((d) => !LEFT_OUT.includes(d!)), ...ADDED]);
    // Still a gyp file gyp reads: the list closed where it was.
    expect(lean.trimEnd().endsWith('],\n}')).toBe(true);
  });

  it('fails loudly on a defines.gypi that does not list one of them (a new better-sqlite3 wording it otherwise)', () => {
    expect(() => leanDefines(gypi.replace("'SQLITE_ENABLE_FTS5',", "'SQLITE_ENABLE_FTS5=1',"))).toThrow(
      /no single SQLITE_ENABLE_FTS5/,
    );
  });
});

describe('checkLean', () => {
  it("refuses node_modules' own build (full-text search compiled in) and passes one whose options are the lean ones", () => {
    const full = join(dir, 'full.node');
    // SQLite's table of compile options, as the strings the library carries.
    writeFileSync(full, Buffer.from('\0ENABLE_FTS5\0ENABLE_RTREE\0OMIT_DEPRECATED\0', 'latin1'));
    expect(() => checkLean(full)).toThrow(/SQLITE_ENABLE_FTS5 compiled in.*SQLITE_OMIT_JSON missing/);
    const lean = join(dir, 'lean.node');
    writeFileSync(lean, Buffer.from('\0OMIT_DEPRECATED\0OMIT_JSON\0', 'latin1'));
    expect(() => checkLean(lean)).not.toThrow();
    const soundex = join(dir, 'soundex.node');
    writeFileSync(soundex, Buffer.from('\0OMIT_DEPRECATED\0OMIT_JSON\0SOUNDEX\0', 'latin1'));
    expect(() => checkLean(soundex)).toThrow(/SQLITE_SOUNDEX compiled in/);
    const built = join(sqliteDir, 'build', 'Release', 'better_sqlite3.node');
    expect(() => checkLean(built)).toThrow(/not the package's lean SQLite/);
  });
});
