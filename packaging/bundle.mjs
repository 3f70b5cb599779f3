#!/usr/bin/env node
// The agent and keystonectl as the package installs them: one directory of minified ES modules made by esbuild from
// dist/ (npm run build), no node_modules, no source maps. Shared code and what is loaded only when used (Git, the
// API, Docker's client, age) are chunks of their own, so a device reads only what it runs.
//
//   node packaging/bundle.mjs [--out dist-bundle] [--version 0.2.0]
//
// The directory holds keystone.mjs, keystonectl.mjs, chunk-*.mjs, web/ (the dashboard), launch.sh (what the
// commands in /usr/bin source), package.json (version and engines), THIRD-PARTY-LICENSES (every bundled package's licence) and native/, the state store's addons
// (better_sqlite3-<platform>-<arch>-abi<N>.node): this machine's, from node_modules; build-deb.mjs adds those of
// the package's architecture.
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import process from 'node:process';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const PROJECT = resolve(import.meta.dirname, '..');

/**
 * ssh2 is docker-modem's transport for `ssh://` engines, loaded with it at the top: the agent only talks to local
 * sockets and TCP, and ssh2 holds a 16 MB WebAssembly buffer once loaded. The bundle gets this stand-in instead.
 */
const SSH2_STAND_IN = `export class Client { constructor() { throw new Error('keystone: an ssh:// container engine is not supported (use the engine\\'s local socket)'); } }
export default { Client };`;

/**
 * isomorphic-git deflates the objects it writes (the Git notes reporter's) with the web CompressionStream when Node has
 * one, read back through `new Response(…)`: that loads Node's fetch implementation (undici) and its web streams, ~5 MiB
 * of resident memory for good in an agent that follows Git (bench/footprint.bench.ts), to compress notes of a few
 * hundred bytes. The bundle takes its other deflate, pako's (already bundled for inflating), as it already does for
 * inflating: the objects and their ids are the same.
 */
const ISOMORPHIC_GIT_DEFLATE = {
  from: 'let supportsCompressionStream = null;',
  to: 'let supportsCompressionStream = false;',
};

/** The addon file name for this machine's Node: the same rule as src/store/sqlite-addon.ts. */
export async function hostAddonName() {
  const { addonFileName } = await import(join(PROJECT, 'dist', 'store', 'sqlite-addon.js'));
  return addonFileName(process.platform, process.arch, process.versions.modules);
}

/**
 * Builds the bundle into `out` (emptied first). Returns the files written and the packages bundled. Its addon is
 * `addon` when given (the package's, packaging/sqlite-addon-build.mjs), else this machine's from node_modules.
 */
export async function bundle({ out, version, addon }) {
  if (!existsSync(join(PROJECT, 'dist', 'cli', 'keystone.js')))
    throw new Error(`${PROJECT}/dist is not built: run npm run build first`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const result = await build({
    absWorkingDir: PROJECT,
    entryPoints: { keystone: 'packaging/entries/keystone.mjs', keystonectl: 'packaging/entries/keystonectl.mjs' },
    outdir: out,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunk-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    metafile: true,
    logLevel: 'error',
    define: { __KEYSTONE_BUNDLE__: 'true' },
    // CommonJS dependencies call require() for Node's modules and their optional native parts: a real one.
    banner: { js: "import{createRequire as __ksRequire}from'node:module';const require=__ksRequire(import.meta.url);" },
    // Optional native accelerators their packages load inside try/catch, and macOS's file events: absent, skipped.
    external: ['cpu-features', 'fsevents', '*.node'],
    plugins: [
      {
        name: 'isomorphic-git-deflate',
        setup(b) {
          b.onLoad({ filter: /[\\/]node_modules[\\/]isomorphic-git[\\/]index\.c?js$/ }, ({ path }) => {
            const text = readFileSync(path, 'utf8');
            // Loudly, should a new isomorphic-git word it otherwise: the bundle would quietly carry the 5 MiB again.
            if (text.split(ISOMORPHIC_GIT_DEFLATE.from).length !== 2)
              throw new Error(`${path}: no single "${ISOMORPHIC_GIT_DEFLATE.from}" to turn off its CompressionStream`);
            return { contents: text.replace(ISOMORPHIC_GIT_DEFLATE.from, ISOMORPHIC_GIT_DEFLATE.to), loader: 'js' };
          });
        },
      },
      {
        name: 'ssh2-stand-in',
        setup(b) {
          b.onResolve({ filter: /^ssh2$/ }, () => ({ path: 'ssh2', namespace: 'keystone-stand-in' }));
          b.onLoad({ filter: /.*/, namespace: 'keystone-stand-in' }, () => ({ contents: SSH2_STAND_IN, loader: 'js' }));
        },
      },
    ],
  });
  cpSync(join(PROJECT, 'dist', 'web'), join(out, 'web'), { recursive: true });
  // What /usr/bin/keystone and keystonectl source: the same launcher runs an uninstalled bundle (KEYSTONE_LIB).
  copyFileSync(join(PROJECT, 'packaging', 'launchers', 'launch.sh'), join(out, 'launch.sh'));
  const pkg = JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8'));
  const manifest = {
    name: pkg.name,
    version: version ?? pkg.version,
    description: pkg.description,
    license: pkg.license,
    type: 'module',
    engines: pkg.engines,
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const packages = bundledPackages(result.metafile);
  writeFileSync(join(out, 'THIRD-PARTY-LICENSES'), licenceText(packages));
  mkdirSync(join(out, 'native'));
  const require = createRequire(join(PROJECT, 'package.json'));
  const native =
    addon ?? join(dirname(require.resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
  if (existsSync(native)) copyFileSync(native, join(out, 'native', await hostAddonName()));
  return { files: readdirSync(out), packages };
}

/** Each package under node_modules that esbuild took code from: name, version and its directory. */
function bundledPackages(metafile) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) dirs.add(m[1]);
  }
  return [...dirs].sort().map((dir) => {
    const pkg = JSON.parse(readFileSync(join(PROJECT, dir, 'package.json'), 'utf8'));
    return {
      name: pkg.name,
      version: pkg.version,
      license: typeof pkg.license === 'string' ? pkg.license : 'see below',
      dir: join(PROJECT, dir),
    };
  });
}

/** The licence of every bundled package, as the package must carry them (the minified code drops their comments). */
function licenceText(packages) {
  const parts = ['Keystone bundles the following packages (npm), each under its own licence, reproduced below.\n'];
  for (const p of packages) {
    const file = readdirSync(p.dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    parts.push(
      `\n==== ${p.name} ${p.version} (${p.license})\n\n${file ? readFileSync(join(p.dir, file), 'utf8').trim() : `(no licence file in the package; its package.json says ${p.license})`}\n`,
    );
  }
  return parts.join('');
}

async function main() {
  const { values } = parseArgs({ options: { out: { type: 'string' }, version: { type: 'string' } } });
  const out = resolve(values.out ?? join(PROJECT, 'dist-bundle'));
  const started = Date.now();
  const { files, packages } = await bundle({ out, version: values.version });
  process.stdout.write(
    `${relative(process.cwd(), out) || out}: ${files.length} entries, ${packages.length} packages bundled, in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === import.meta.filename) {
  main().catch((e) => {
    process.stderr.write(`bundle: ${e.message}\n`);
    process.exitCode = 1;
  });
}
