// What goes under /usr/lib/keystone: the built code, its production dependencies, the native state store built for
// the bundled Node, and that Node. Everything comes from the machine that builds, so the package is for its
// architecture (packaging/README.md: arm64).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import process from 'node:process';

/** The agent's engines field; Debian 12's own Node (18) is why the package bundles one. */
export const MIN_NODE = [20, 19, 0];

export function checkNodeVersion(version = process.versions.node) {
  const have = version.split('.').map(Number);
  // The first part that differs decides.
  const difference = MIN_NODE.map((n, i) => (have[i] ?? 0) - n).find((d) => d !== 0) ?? 0;
  if (!(difference >= 0)) throw new Error(`the Node running this build is ${version}; the package bundles it, and the agent needs ≥ ${MIN_NODE.join('.')}: build with a newer Node`);
}

/**
 * dist/ (without tsc's build info and source maps: the launcher does not enable source maps), bin/ and package.json,
 * its version set to the package's so that `keystone --version` names what is installed.
 */
export function stageCode(projectRoot, libDir, version) {
  if (!existsSync(join(projectRoot, 'dist', 'cli', 'keystone.js'))) throw new Error(`${projectRoot}/dist is not built: run npm run build (npm run package does)`);
  mkdirSync(libDir, { recursive: true });
  cpSync(join(projectRoot, 'dist'), join(libDir, 'dist'), { recursive: true, filter: (src) => !src.endsWith('.map') && !src.endsWith('.tsbuildinfo') });
  cpSync(join(projectRoot, 'bin'), join(libDir, 'bin'), { recursive: true });
  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8'));
  pkg.version = version;
  writeFileSync(join(libDir, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');
  copyFileSync(join(projectRoot, 'package-lock.json'), join(libDir, 'package-lock.json'));
}

/**
 * Production dependencies exactly as locked (`npm ci --omit=dev`), from npm's cache when it has them (a build machine
 * offline with a warm cache works). No install scripts: they would fetch or compile better-sqlite3 for whatever Node
 * npm runs under; the addon is copied from the project, built for the Node being bundled, and checked by
 * checkRuntime().
 */
export function installDependencies(projectRoot, libDir) {
  const r = spawnSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: libDir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.status !== 0) throw new Error(`npm ci --omit=dev in the staging directory failed:\n${r.stderr || r.stdout || r.error?.message}`);
  rmSync(join(libDir, 'package-lock.json'));

  const projectRequire = createRequire(join(projectRoot, 'package.json'));
  const sqliteDir = dirname(projectRequire.resolve('better-sqlite3/package.json'));
  const addon = join(sqliteDir, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(addon)) throw new Error(`${addon} is missing: npm ci in ${projectRoot} (or npm rebuild better-sqlite3) builds it for this Node`);
  const staged = join(libDir, 'node_modules', 'better-sqlite3');
  mkdirSync(join(staged, 'build', 'Release'), { recursive: true });
  copyFileSync(addon, join(staged, 'build', 'Release', 'better_sqlite3.node'));
  // SQLite's amalgamation and the addon's C++ (10 MiB) only build it, and it is built.
  for (const d of ['deps', 'src']) rmSync(join(staged, d), { recursive: true, force: true });
}

/**
 * The Node running this build, as /usr/lib/keystone/node. Its symbol table goes (strip: ~12 MiB of the ~100 MiB,
 * nothing Node or an addon needs at run time; addons link against the dynamic symbols, which stay) when binutils is
 * there and `strip` is not false.
 */
export function stageNode(libDir, { strip = true } = {}) {
  const dest = join(libDir, 'node');
  copyFileSync(process.execPath, dest);
  if (strip && spawnSync('strip', ['--version'], { stdio: 'ignore' }).status === 0) {
    execFileSync('strip', [dest]);
    // The addon too, but only of what linking does not use: it is a shared object, loaded by its dynamic symbols.
    execFileSync('strip', ['--strip-unneeded', join(libDir, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node')]);
    return { stripped: true };
  }
  return { stripped: false };
}

/** The staged tree run as it will be installed: the bundled Node's version, the state store's addon, the CLI. */
export function checkRuntime(libDir, version) {
  const node = join(libDir, 'node');
  const run = (args) => {
    const r = spawnSync(node, args, { cwd: libDir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    if (r.status !== 0) throw new Error(`the staged runtime failed: node ${args.join(' ')}:\n${r.stderr || r.error?.message}`);
    return r.stdout.trim();
  };
  checkNodeVersion(run(['-p', 'process.versions.node']));
  // Loading the addon is the ABI check: one built for another Node's modules version refuses to load.
  run(['-e', `const D = require(${JSON.stringify(join(libDir, 'node_modules', 'better-sqlite3'))}); new D(':memory:').prepare('select 1').get();`]);
  const said = run([join(libDir, 'bin', 'keystone.js'), '--version']);
  if (said !== `keystone ${version}`) throw new Error(`the staged keystone --version said "${said}", not "keystone ${version}"`);
}
