// The state store's native addon (better-sqlite3, as locked in package-lock.json) compiled for one architecture and
// one Node ABI: node-gyp against the headers of that Node's major (packaging/node-runtime.json), with Debian's cross
// toolchain (g++-aarch64-linux-gnu, g++-arm-linux-gnueabihf) for another architecture. About a minute each (SQLite's
// amalgamation), so each result is kept in the build cache under everything that goes into it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
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
    .update(JSON.stringify({ arch, abi, headers: spec.headers, locked, compiler, v: 2 }))
    .digest('hex')
    .slice(0, 16);
  const out = join(buildCache(), 'addons', `better_sqlite3-${sqliteVersion}-${arch}-abi${abi}-${key}.node`);
  if (existsSync(out)) return out;

  const headers = npmPackage(spec.headers);
  const work = join(tmpdir(), `keystone-addon-${arch}-${abi}-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  cpSync(sqliteDir, work, { recursive: true, filter: (src) => !src.startsWith(join(sqliteDir, 'build')) });
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
        env: { ...process.env, ...tools, npm_config_nodedir: headers },
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
    mkdirSync(dirname(out), { recursive: true });
    copyFileSync(built, `${out}.partial`);
    renameSync(`${out}.partial`, out);
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
