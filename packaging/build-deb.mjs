#!/usr/bin/env node
// npm run package: keystone_<version>_<arch>.deb, built with dpkg-deb from dist/ (npm run build), the production
// dependencies and the Node running this script, for this machine's architecture.
//
//   node packaging/build-deb.mjs [--out dist-deb] [--version 0.2.0] [--compress xz|gzip|none] [--no-strip]
//
// The version defaults to package.json's (KEYSTONE_DEB_VERSION overrides it: a test builds a newer package for an
// upgrade); xz for releases (the default), gzip (level 1) or none for speed (KEYSTONE_DEB_COMPRESS).
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import process from 'node:process';
import { parseArgs } from 'node:util';
import { installedSizeKiB, md5sums, renderControl, sharedLibraryDepends } from './deb-control.mjs';
import { debianArch, debianVersion } from './deb-version.mjs';
import { checkNodeVersion, checkRuntime, installDependencies, stageCode, stageNode } from './stage-app.mjs';

const HERE = import.meta.dirname;
const PROJECT = resolve(HERE, '..');
/** dpkg-deb's -Z and -z: xz at its default level for what ships; gzip's fastest, or nothing, for tests. */
const COMPRESSION = { xz: ['-Zxz'], gzip: ['-Zgzip', '-z1'], none: ['-Znone'] };

const say = (line) => process.stdout.write(`${line}\n`);
const warn = (line) => process.stderr.write(`build-deb: warning: ${line}\n`);

function options() {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      version: { type: 'string' },
      compress: { type: 'string' },
      'no-strip': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    say('usage: node packaging/build-deb.mjs [--out DIR] [--version VERSION] [--compress xz|gzip|none] [--no-strip]');
    process.exit(0);
  }
  const compress = values.compress ?? process.env.KEYSTONE_DEB_COMPRESS ?? 'xz';
  if (!(compress in COMPRESSION)) throw new Error(`--compress takes xz, gzip or none, not "${compress}"`);
  const pkg = JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8'));
  const version = values.version ?? process.env.KEYSTONE_DEB_VERSION ?? pkg.version;
  return {
    out: resolve(values.out ?? process.env.KEYSTONE_DEB_OUT ?? join(PROJECT, 'dist-deb')),
    version,
    debVersion: debianVersion(version),
    compress,
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

/**
 * Root-owned (dpkg-deb --root-owner-group) with modes set here, not inherited from the build machine's umask or
 * checkout: directories 0755, files 0644 or, executable, 0755 (not addons: shared objects are loaded, not run); the
 * state directory 0711, the agent's own mode for it (run users reach their work directories through it, nothing
 * more), so that neither dpkg nor the agent keeps changing it.
 */
function normalizeModes(root) {
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) continue;
      if (st.isDirectory()) {
        chmodSync(p, 0o755);
        walk(p);
      } else chmodSync(p, st.mode & 0o111 && !name.endsWith('.node') ? 0o755 : 0o644);
    }
  };
  walk(root);
  chmodSync(join(root, 'var', 'lib', 'keystone'), 0o711);
}

function nodeLicense() {
  const prefix = dirname(dirname(process.execPath));
  return [join(prefix, 'share', 'doc', 'nodejs', 'LICENSE'), join(prefix, 'share', 'doc', 'node', 'LICENSE'), join(prefix, 'LICENSE')].find((f) => existsSync(f));
}

function stage(root, opts) {
  const lib = join(root, 'usr', 'lib', 'keystone');
  stageCode(PROJECT, lib, opts.version);
  installDependencies(PROJECT, lib);
  const { stripped } = stageNode(lib, { strip: opts.strip });
  if (opts.strip && !stripped) warn('strip (binutils) is not installed: the bundled node keeps its symbol table (~12 MiB)');
  checkRuntime(lib, opts.version);

  const put = (from, to) => {
    mkdirSync(dirname(join(root, to)), { recursive: true });
    copyFileSync(join(HERE, from), join(root, to));
  };
  put('launchers/keystone', 'usr/bin/keystone');
  put('launchers/keystonectl', 'usr/bin/keystonectl');
  put('keystone.service', 'lib/systemd/system/keystone.service');
  put('agent.toml', 'etc/keystone/agent.toml');
  mkdirSync(join(root, 'etc', 'keystone', 'keys'), { recursive: true });
  mkdirSync(join(root, 'var', 'lib', 'keystone'), { recursive: true });
  put('debian/copyright', 'usr/share/doc/keystone/copyright');
  put('README.md', 'usr/share/doc/keystone/README.Debian');
  const license = nodeLicense();
  if (license) copyFileSync(license, join(root, 'usr', 'share', 'doc', 'keystone', 'node-LICENSE'));
  else warn(`no LICENSE file beside ${process.execPath}: the package points to Node's on GitHub instead`);

  const debian = join(root, 'DEBIAN');
  mkdirSync(debian);
  for (const f of ['postinst', 'prerm', 'postrm', 'conffiles']) copyFileSync(join(HERE, 'debian', f), join(debian, f));
  normalizeModes(root);
  for (const f of ['postinst', 'prerm', 'postrm']) chmodSync(join(debian, f), 0o755);

  const binaries = [join(lib, 'node'), ...findAddons(join(lib, 'node_modules'))];
  const control = renderControl(readFileSync(join(HERE, 'debian', 'control'), 'utf8'), {
    VERSION: opts.debVersion,
    ARCH: opts.arch,
    MAINTAINER: opts.maintainer,
    INSTALLED_SIZE: installedSizeKiB(root),
    SHLIBS_DEPENDS: sharedLibraryDepends(binaries, warn),
  });
  writeFileSync(join(debian, 'control'), control);
  const conffiles = readFileSync(join(debian, 'conffiles'), 'utf8').split('\n').filter(Boolean);
  writeFileSync(join(debian, 'md5sums'), md5sums(root, conffiles));
  chmodSync(join(debian, 'control'), 0o644);
  chmodSync(join(debian, 'md5sums'), 0o644);
  return control;
}

/** Native addons (*.node) in the staged dependencies: their libraries are the package's too. */
function findAddons(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...findAddons(p));
    else if (e.isFile() && e.name.endsWith('.node')) out.push(p);
  }
  return out;
}

function main() {
  const started = Date.now();
  checkNodeVersion();
  const opts = options();
  opts.arch = debianArch();
  const root = mkdtempSync(join(tmpdir(), 'keystone-deb-'));
  try {
    chmodSync(root, 0o755);
    const control = stage(root, opts);
    mkdirSync(opts.out, { recursive: true });
    const deb = join(opts.out, `keystone_${opts.debVersion}_${opts.arch}.deb`);
    execFileSync('dpkg-deb', ['--root-owner-group', ...COMPRESSION[opts.compress], '--build', root, deb], { stdio: ['ignore', 'ignore', 'inherit'] });
    const size = statSync(deb).size;
    const depends = /^Depends: (.*)$/m.exec(control)?.[1];
    say(`${relative(process.cwd(), deb) || deb}  ${(size / 1048576).toFixed(1)} MiB (${size} bytes, ${opts.compress}), Depends: ${depends}, built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

try {
  main();
} catch (e) {
  process.stderr.write(`build-deb: ${e.message}\n`);
  process.exitCode = 1;
}
