// The state store's native addon (better-sqlite3, as locked in package-lock.json) compiled for one architecture and
// one Node ABI: node-gyp against the headers of that Node's major (packaging/node-runtime.json), with Debian's cross
// toolchain (g++-aarch64-linux-gnu, g++-arm-linux-gnueabihf) for another architecture. About a minute each (SQLite's
// amalgamation), so each result is kept in the build cache under everything that goes into it.
//
// The package's SQLite is leaner than better-sqlite3's own build: without the features the state store never uses
// (full-text search, R-trees, JSON functions, statistics tables) and compiled for size (-Os: SQLite alone, not the
// addon's C++). Its code is 0.58 MB instead of 1.72, and the agent holds ~1 MiB less of it resident (issue 31;
// docs/benchmarks.md, footprint). The store's queries are plain tables, indexes and transactions.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { archInfo, hostArch } from './deb-arch.mjs';
import { buildCache, npmPackage } from './npm-tarball.mjs';
import process from 'node:process';

const PROJECT = join(import.meta.dirname, '..');
const require = createRequire(join(PROJECT, 'package.json'));

/** The compiler of `arch`: the machine's own, or Debian's cross toolchain named after the triplet. */
export function toolchain(arch) {
  const { triplet } = archInfo(arch);
  const prefix = arch === hostArch() ? '' : `${triplet}-`;
  const tools = {
    CC: `${prefix}gcc`,
    CXX: `${prefix}g++`,
    LINK: `${prefix}g++`,
    AR: `${prefix}ar`,
    STRIP: `${prefix}strip`,
  };
  const version = spawnSync(tools.CXX, ['--version'], { encoding: 'utf8' });
  if (version.status !== 0)
    throw new Error(
      `${tools.CXX} is not installed: apt-get install g++${prefix ? `-${triplet}` : ''} binutils${prefix ? `-${triplet}` : ''} (Debian's cross toolchain for ${arch})`,
    );
  return { tools, version: version.stdout.split('\n')[0] };
}

/** better-sqlite3's compile-time options the package's SQLite leaves out (deps/defines.gypi). */
export const LEFT_OUT = [
  'SQLITE_ENABLE_DBSTAT_VTAB',
  'SQLITE_ENABLE_FTS3',
  'SQLITE_ENABLE_FTS3_PARENTHESIS',
  'SQLITE_ENABLE_FTS4',
  'SQLITE_ENABLE_FTS5',
  'SQLITE_ENABLE_GEOPOLY',
  'SQLITE_ENABLE_MATH_FUNCTIONS',
  'SQLITE_ENABLE_PERCENTILE',
  'SQLITE_ENABLE_RTREE',
  'SQLITE_ENABLE_STAT4',
  'SQLITE_SOUNDEX',
];
/** And those it adds: the JSON functions, built in since SQLite 3.38, are left out too. */
export const ADDED = ['SQLITE_OMIT_JSON'];
/** SQLite's C compiled for size; the make files gyp writes put $(CFLAGS) after node-gyp's -O3, so this one wins. */
export const SQLITE_CFLAGS = '-Os';

/**
 * better-sqlite3's deps/defines.gypi without LEFT_OUT and with ADDED. Loud when a define it expects is not there
 * exactly once: a new better-sqlite3 that words them otherwise must not quietly ship the whole SQLite again.
 */
export function leanDefines(gypi) {
  let text = gypi;
  for (const define of LEFT_OUT) {
    const line = `    '${define}',\n`;
    if (text.split(line).length !== 2)
      throw new Error(`better-sqlite3's defines.gypi has no single ${define} to leave out`);
    text = text.replace(line, '');
  }
  const end = text.lastIndexOf('  ],');
  if (end < 0) throw new Error("better-sqlite3's defines.gypi has no list of defines");
  return `${text.slice(0, end)}${ADDED.map((d) => `    '${d}',\n`).join('')}${text.slice(end)}`;
}

/** Loud unless the compiled addon says (in SQLite's table of compile options) that it is the lean build. */
export function checkLean(addon) {
  const bytes = readFileSync(addon).toString('latin1');
  const kept = LEFT_OUT.filter((d) => bytes.includes(`\0${d.slice('SQLITE_'.length)}\0`));
  const missing = ADDED.filter((d) => !bytes.includes(`\0${d.slice('SQLITE_'.length)}\0`));
  if (kept.length || missing.length)
    throw new Error(
      `${addon} is not the package's lean SQLite: ${[...kept.map((d) => `${d} compiled in`), ...missing.map((d) => `${d} missing`)].join(', ')}`,
    );
}

/** The addon for `arch` and `abi` (a key of node-runtime.json's abis): its path in the cache, built if need be. */
export function sqliteAddon(arch, abi, runtime, log = () => {}) {
  const spec = runtime.abis[abi];
  if (!spec) throw new Error(`packaging/node-runtime.json has no ABI ${abi}`);
  const sqliteDir = dirname(require.resolve('better-sqlite3/package.json'));
  const sqliteVersion = JSON.parse(readFileSync(join(sqliteDir, 'package.json'), 'utf8')).version;
  const { tools, version: compiler } = toolchain(arch);
  // Everything that goes into it, the locked package's integrity included (a changed lock builds anew).
  const locked =
    JSON.parse(readFileSync(join(PROJECT, 'package-lock.json'), 'utf8')).packages?.['node_modules/better-sqlite3']
      ?.integrity ?? sqliteVersion;
  const key = createHash('sha256')
    .update(
      JSON.stringify({
        arch,
        abi,
        headers: spec.headers,
        locked,
        compiler,
        LEFT_OUT,
        ADDED,
        SQLITE_CFLAGS,
        leanDefines: String(leanDefines),
        v: 3,
      }),
    )
    .digest('hex')
    .slice(0, 16);
  const out = join(buildCache(), 'addons', `better_sqlite3-${sqliteVersion}-${arch}-abi${abi}-${key}.node`);
  if (existsSync(out)) {
    // A cache is a directory anyone with the account can write: what is taken from it is checked like a new build.
    checkLean(out);
    return out;
  }

  const headers = npmPackage(spec.headers);
  const work = join(tmpdir(), `keystone-addon-${arch}-${abi}-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  cpSync(sqliteDir, work, { recursive: true, filter: (src) => !src.startsWith(join(sqliteDir, 'build')) });
  const defines = join(work, 'deps', 'defines.gypi');
  writeFileSync(defines, leanDefines(readFileSync(defines, 'utf8')));
  try {
    log(`building better-sqlite3 ${sqliteVersion} for ${arch}, Node ABI ${abi} (${spec.node}) with ${tools.CXX}…`);
    const gyp = require.resolve('node-gyp/bin/node-gyp.js');
    const r = spawnSync(
      process.execPath,
      [gyp, 'rebuild', `--arch=${archInfo(arch).gyp}`, `--nodedir=${headers}`, '--jobs=max', '--release'],
      {
        cwd: work,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...tools, CFLAGS: SQLITE_CFLAGS, npm_config_nodedir: headers },
      },
    );
    if (r.status !== 0)
      throw new Error(
        `node-gyp for better-sqlite3 (${arch}, ABI ${abi}) failed:\n${(r.stderr || r.stdout || r.error?.message || '').slice(-4000)}`,
      );
    const built = join(work, 'build', 'Release', 'better_sqlite3.node');
    // Only what linking does not use: it is a shared object, loaded by its dynamic symbols.
    const s = spawnSync(tools.STRIP, ['--strip-unneeded', built], { encoding: 'utf8' });
    if (s.status !== 0) throw new Error(`${tools.STRIP} failed: ${s.stderr || s.error?.message}`);
    checkLean(built);
    mkdirSync(dirname(out), { recursive: true });
    // A partial file of this build's own: two builds of the same key at once (the package tests and the state store's
    // run in parallel workers) would otherwise write one partial file, and the second rename would fail.
    const partial = `${out}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      copyFileSync(built, partial);
      renameSync(partial, out);
    } finally {
      rmSync(partial, { force: true });
    }
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
