#!/usr/bin/env node
// npm run package: keystone_<version>_<arch>.deb for amd64, arm64 or armhf, built on any of them with dpkg-deb:
// the agent as one esbuild bundle (packaging/bundle.mjs, from dist/: npm run build), the state store's addon compiled
// for that architecture and each Node ABI the package supports (packaging/sqlite-addon-build.mjs), the same unit,
// configuration and maintainer scripts. For amd64 and arm64 also keystone-node_<node>_<arch>.deb: the Node.js
// release build of packaging/node-runtime.json from the npm registry (armhf uses Debian 13's nodejs: Node's own
// armv7 builds stopped before 20.19). Every ELF file of both is checked to be for the architecture.
//
//   node packaging/build-deb.mjs [--arch amd64|arm64|armhf] [--out dist-deb] [--version 0.2.0]
//                                [--compress xz|gzip|none] [--abi 115,127,137] [--no-node] [--no-strip]
//
// --arch defaults to this machine's. The version defaults to package.json's (KEYSTONE_DEB_VERSION overrides it: a
// test builds a newer package for an upgrade); xz for releases (the default), gzip (level 1) or none for speed
// (KEYSTONE_DEB_COMPRESS). --abi builds the addon for fewer Node ABIs (a test that runs one Node); --no-node skips
// keystone-node.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import process from 'node:process';
import { parseArgs } from 'node:util';
import { bundle } from './bundle.mjs';
import { archInfo, hostArch } from './deb-arch.mjs';
import {
  foreignLibraryDepends,
  installedSizeKiB,
  md5sums,
  normalizeModes,
  renderControl,
  sharedLibraryDepends,
} from './deb-control.mjs';
import { debianVersion } from './deb-version.mjs';
import { checkElfArch } from './elf-check.mjs';
import { buildNodeDeb } from './node-deb.mjs';
import { sqliteAddon, toolchain } from './sqlite-addon-build.mjs';

const HERE = import.meta.dirname;
const PROJECT = resolve(HERE, '..');
/** dpkg-deb's -Z and -z: xz at its default level for what ships; gzip's fastest, or nothing, for tests. */
const COMPRESSION = { xz: ['-Zxz'], gzip: ['-Zgzip', '-z1'], none: ['-Znone'] };

const say = (line) => process.stdout.write(`${line}\n`);
const warn = (line) => process.stderr.write(`build-deb: warning: ${line}\n`);

function options() {
  const { values } = parseArgs({
    options: {
      arch: { type: 'string' },
      out: { type: 'string' },
      version: { type: 'string' },
      compress: { type: 'string' },
      abi: { type: 'string' },
      'no-node': { type: 'boolean', default: false },
      'no-strip': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    say(
      'usage: node packaging/build-deb.mjs [--arch amd64|arm64|armhf] [--out DIR] [--version VERSION] [--compress xz|gzip|none] [--abi 115,127,137] [--no-node] [--no-strip]',
    );
    process.exit(0);
  }
  const compress = values.compress ?? process.env.KEYSTONE_DEB_COMPRESS ?? 'xz';
  if (!(compress in COMPRESSION)) throw new Error(`--compress takes xz, gzip or none, not "${compress}"`);
  const pkg = JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8'));
  const version = values.version ?? process.env.KEYSTONE_DEB_VERSION ?? pkg.version;
  const arch = values.arch ?? hostArch();
  archInfo(arch);
  const runtime = JSON.parse(readFileSync(join(HERE, 'node-runtime.json'), 'utf8'));
  const abis = values.abi ? values.abi.split(',').map((a) => a.trim()) : Object.keys(runtime.abis);
  for (const abi of abis)
    if (!runtime.abis[abi])
      throw new Error(
        `--abi: packaging/node-runtime.json builds for ${Object.keys(runtime.abis).join(', ')}, not "${abi}"`,
      );
  return {
    arch,
    out: resolve(values.out ?? process.env.KEYSTONE_DEB_OUT ?? join(PROJECT, 'dist-deb')),
    version,
    debVersion: debianVersion(version),
    compress,
    abis,
    runtime,
    node: !values['no-node'] && Boolean(runtime.runtime.packages[arch]),
    strip: !values['no-strip'],
    maintainer: process.env.KEYSTONE_DEB_MAINTAINER ?? maintainerOf(pkg),
  };
}

/** package.json's author when it has one; Maintainer is a required field, and an operator can set it at build time. */
function maintainerOf(pkg) {
  const a = pkg.author;
  if (typeof a === 'string' && a.includes('<')) return a;
  if (a && typeof a === 'object' && a.name && a.email) return `${a.name} <${a.email}>`;
  return 'Keystone maintainers <keystone@localhost>';
}

/** The Depends on a Node: keystone-node first (the addon's main ABI, and what apt installs when neither is there). */
function nodeDepends(opts) {
  const system = 'nodejs (>= 20.19~)';
  return opts.runtime.runtime.packages[opts.arch]
    ? `keystone-node (>= ${opts.runtime.runtime.version.split('.')[0]}) | ${system}`
    : system;
}

/** The shared libraries of the package's binaries: dpkg-shlibdeps on the build machine's, readelf for another's. */
function libraryDepends(arch, binaries) {
  return arch === hostArch() ? sharedLibraryDepends(binaries, warn) : foreignLibraryDepends(binaries);
}

async function stage(root, opts) {
  const lib = join(root, 'usr', 'lib', 'keystone');
  await bundle({ out: lib, version: opts.version });
  // The bundle's addon is this machine's, from node_modules: the package carries its architecture's, one per ABI.
  const native = join(lib, 'native');
  rmSync(native, { recursive: true, force: true });
  mkdirSync(native);
  const { addonFileName } = await import(join(PROJECT, 'dist', 'store', 'sqlite-addon.js'));
  const addons = opts.abis.map((abi) => {
    const file = join(native, addonFileName('linux', archInfo(opts.arch).node, abi));
    copyFileSync(sqliteAddon(opts.arch, abi, opts.runtime, say), file);
    return file;
  });

  const put = (from, to) => {
    mkdirSync(dirname(join(root, to)), { recursive: true });
    copyFileSync(join(HERE, from), join(root, to));
  };
  put('launchers/keystone', 'usr/bin/keystone');
  put('launchers/keystonectl', 'usr/bin/keystonectl');
  put('launchers/agent-rollback', 'usr/lib/keystone/agent-rollback');
  put('keystone.service', 'lib/systemd/system/keystone.service');
  put('agent.toml', 'etc/keystone/agent.toml');
  mkdirSync(join(root, 'etc', 'keystone', 'keys'), { recursive: true });
  mkdirSync(join(root, 'var', 'lib', 'keystone'), { recursive: true });
  // The installed launchers take no KEYSTONE_LIB, KEYSTONE_NODE or KEYSTONE_AGENT_HOME (test hooks of the
  // repository's copies): what root runs is /usr/lib/keystone's or a version the agent staged, whatever environment a
  // caller keeps. agent-rollback keeps its KEYSTONE_AGENT_HOME: it only reads and writes the agent's own files, as root.
  for (const f of ['usr/bin/keystone', 'usr/bin/keystonectl', 'usr/lib/keystone/launch.sh']) {
    const text = readFileSync(join(root, f), 'utf8')
      .replaceAll('${KEYSTONE_LIB:-/usr/lib/keystone}', '/usr/lib/keystone')
      .replaceAll('${KEYSTONE_NODE:-}', '')
      .replaceAll('${KEYSTONE_AGENT_HOME:-/var/lib/keystone-agent}', '/var/lib/keystone-agent');
    // (Read, that is: `${KEYSTONE_…` or `$KEYSTONE_…`; handing KEYSTONE_AGENT_HOME to agent-rollback is writing it.)
    if (/\$\{?KEYSTONE_(LIB|NODE|AGENT_HOME)/.test(text.replace(/^\s*#.*$/gm, '')))
      throw new Error(
        `${f} still reads KEYSTONE_LIB, KEYSTONE_NODE or KEYSTONE_AGENT_HOME: packaging/build-deb.mjs no longer matches the launchers`,
      );
    writeFileSync(join(root, f), text);
  }
  put('debian/copyright', 'usr/share/doc/keystone/copyright');
  copyFileSync(
    join(lib, 'THIRD-PARTY-LICENSES'),
    join(root, 'usr', 'share', 'doc', 'keystone', 'THIRD-PARTY-LICENSES'),
  );
  put('README.md', 'usr/share/doc/keystone/README.Debian');

  const debian = join(root, 'DEBIAN');
  mkdirSync(debian);
  for (const f of ['postinst', 'prerm', 'postrm', 'conffiles']) copyFileSync(join(HERE, 'debian', f), join(debian, f));
  normalizeModes(root);
  for (const f of ['postinst', 'prerm', 'postrm']) chmodSync(join(debian, f), 0o755);
  checkElfArch(root, opts.arch);

  const control = renderControl(readFileSync(join(HERE, 'debian', 'control'), 'utf8'), {
    VERSION: opts.debVersion,
    ARCH: opts.arch,
    MAINTAINER: opts.maintainer,
    INSTALLED_SIZE: installedSizeKiB(root),
    NODE_DEPENDS: nodeDepends(opts),
    SHLIBS_DEPENDS: libraryDepends(opts.arch, addons),
  });
  writeFileSync(join(debian, 'control'), control);
  const conffiles = readFileSync(join(debian, 'conffiles'), 'utf8').split('\n').filter(Boolean);
  writeFileSync(join(debian, 'md5sums'), md5sums(root, conffiles));
  chmodSync(join(debian, 'control'), 0o644);
  chmodSync(join(debian, 'md5sums'), 0o644);
  return { control, lib };
}

/**
 * On the build machine's architecture, the staged bundle run as installed, by each Node it can: this one and
 * keystone-node's. Its version must be the package's, and each addon must load in the Node of its ABI (loading is
 * the ABI check: an addon for another modules version refuses).
 */
function checkRuntime(lib, opts, nodes) {
  for (const node of nodes) {
    // A Node of an ABI this build left out (--abi) would be refused by the bundle's preflight: not this check's.
    const abi = spawnSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim();
    if (!opts.abis.includes(abi)) continue;
    const r = spawnSync(node, [join(lib, 'keystone.mjs'), '--version'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    if (r.status !== 0 || r.stdout.trim() !== `keystone ${opts.version}`)
      throw new Error(
        `the staged bundle run by ${node} said "${(r.stdout + r.stderr).trim()}", not "keystone ${opts.version}"`,
      );
    const load = spawnSync(
      node,
      [
        '-e',
        `const {join}=require('node:path');const f=require('node:fs').readdirSync(process.argv[1]).find(f=>f.endsWith('-abi'+process.versions.modules+'.node'));if(!f)process.exit(3);process.dlopen({exports:{}},join(process.argv[1],f));`,
        join(lib, 'native'),
      ],
      { encoding: 'utf8' },
    );
    if (load.status !== 0) throw new Error(`the state store's addon does not load in ${node}: ${load.stderr}`);
  }
}

async function main() {
  const started = Date.now();
  const opts = options();
  const built = [];
  const root = mkdtempSync(join(tmpdir(), 'keystone-deb-'));
  try {
    chmodSync(root, 0o755);
    const { control, lib } = await stage(root, opts);
    let nodeDeb;
    if (opts.node)
      nodeDeb = buildNodeDeb({
        arch: opts.arch,
        runtime: opts.runtime,
        out: opts.out,
        compress: COMPRESSION[opts.compress],
        maintainer: opts.maintainer,
        strip: opts.strip ? toolchain(opts.arch).tools.STRIP : undefined,
        libraryDepends,
      });
    if (opts.arch === hostArch()) checkRuntime(lib, opts, [process.execPath, ...(nodeDeb ? [nodeDeb.node] : [])]);
    mkdirSync(opts.out, { recursive: true });
    const deb = join(opts.out, `keystone_${opts.debVersion}_${opts.arch}.deb`);
    execFileSync('dpkg-deb', ['--root-owner-group', ...COMPRESSION[opts.compress], '--build', root, deb], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    built.push({ deb, depends: /^Depends: (.*)$/m.exec(control)?.[1] });
    if (nodeDeb) built.push(nodeDeb);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  for (const b of built) {
    const size = statSync(b.deb).size;
    say(
      `${relative(process.cwd(), b.deb) || b.deb}  ${(size / 1e6).toFixed(1)} MB (${size} bytes, ${opts.compress}), Depends: ${b.depends}`,
    );
  }
  say(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

try {
  await main();
} catch (e) {
  process.stderr.write(`build-deb: ${e.message}\n`);
  process.exitCode = 1;
}
