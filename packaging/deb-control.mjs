// DEBIAN/control's computed fields and DEBIAN/md5sums, from the staged tree.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

/** Every regular file under `root` (depth first, sorted), skipping DEBIAN/. */
export function filesUnder(root, dir = root) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = join(dir, e.name);
    if (dir === root && e.name === 'DEBIAN') continue;
    if (e.isDirectory()) out.push(...filesUnder(root, p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** dpkg's Installed-Size: KiB, each file rounded up (as dpkg-gencontrol counts). */
export function installedSizeKiB(root) {
  let kib = 0;
  for (const f of filesUnder(root)) kib += Math.ceil(statSync(f).size / 1024) || 1;
  return kib;
}

/**
 * DEBIAN/md5sums, which `dpkg --verify` and debsums check the installed files against. Not the conffiles, as
 * dh_md5sums does: dpkg keeps their sums itself, and the operator is meant to change them.
 */
export function md5sums(root, conffiles = []) {
  const skip = new Set(conffiles.map((f) => f.replace(/^\//, '')));
  return filesUnder(root)
    .filter((f) => !skip.has(relative(root, f)))
    .map((f) => `${createHash('md5').update(readFileSync(f)).digest('hex')}  ${relative(root, f)}\n`)
    .join('');
}

/**
 * The shared libraries the bundled Node and addons need, as Depends: dpkg-shlibdeps (dpkg-dev) reads their symbol
 * versions against the installed libraries' shlibs/symbols files, e.g. `libc6 (>= 2.34), libgcc-s1 (>= 3.4),
 * libstdc++6 (>= 11)`. Without dpkg-dev (a device building its own package), the libraries ldd finds are mapped to
 * their packages and libc6 gets the newest GLIBC_ version the binaries name; the others go unversioned, and a
 * warning says so.
 */
export function sharedLibraryDepends(binaries, warn) {
  const viaShlibdeps = shlibdeps(binaries);
  if (viaShlibdeps) return viaShlibdeps;
  warn('dpkg-shlibdeps (dpkg-dev) is not installed: Depends on libgcc-s1 and libstdc++6 carry no minimum version');
  const packages = new Set();
  for (const bin of binaries) {
    const r = spawnSync('ldd', [bin], { encoding: 'utf8' });
    for (const m of r.stdout.matchAll(/=>\s+(\/\S+)/g)) {
      const pkg = packageOf(m[1]);
      if (pkg) packages.add(pkg);
    }
  }
  const glibc = binaries
    .flatMap((b) => [
      ...readFileSync(b)
        .toString('latin1')
        .matchAll(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\0/g),
    ])
    .map((m) => [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2])
    .pop();
  return [...packages]
    .sort()
    .map((p) => (p === 'libc6' && glibc ? `libc6 (>= ${glibc[2] ? glibc.join('.') : glibc.slice(0, 2).join('.')})` : p))
    .join(', ');
}

/**
 * The package that installed a library ldd found: by the path ldd gives, or, on a merged /usr (where /lib is a link
 * to /usr/lib and each package registered one of the two), the other spelling, or the file the link names.
 */
function packageOf(lib) {
  const candidates = [lib, lib.startsWith('/usr/') ? lib.slice(4) : `/usr${lib}`, realpathSync(lib)];
  for (const path of candidates) {
    const owner = spawnSync('dpkg', ['-S', path], { encoding: 'utf8' });
    if (owner.status === 0) return owner.stdout.split(':')[0];
  }
  return undefined;
}

function shlibdeps(binaries) {
  if (spawnSync('dpkg-shlibdeps', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined;
  // It wants a source tree: a debian/control naming the binary package is all it reads from one.
  const dir = mkdtempSync(join(tmpdir(), 'keystone-shlibdeps-'));
  try {
    mkdirSync(join(dir, 'debian'));
    writeFileSync(join(dir, 'debian', 'control'), 'Source: keystone\n\nPackage: keystone\nArchitecture: any\n');
    // -e for each binary; the addon's V8/Node symbols come from the node binary, not a library: not a dependency.
    const r = spawnSync('dpkg-shlibdeps', ['-O', '--warnings=0', ...binaries.map((b) => `-e${b}`)], {
      cwd: dir,
      encoding: 'utf8',
    });
    const m = /^shlibs:Depends=(.*)$/m.exec(r.stdout);
    return r.status === 0 && m ? m[1].trim() : undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** packaging/debian/control with its @NAME@ fields filled; a field left unfilled is a bug here, not in the package. */
export function renderControl(template, fields) {
  const text = template.replace(/@([A-Z_]+)@/g, (all, name) => {
    if (!(name in fields)) throw new Error(`packaging/debian/control: no value for ${all}`);
    return String(fields[name]);
  });
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** The Debian package of each shared library a Node binary or addon may need (their NEEDED entries). */
const SONAME_PACKAGES = {
  'libc.so.6': 'libc6',
  'libm.so.6': 'libc6',
  'libdl.so.2': 'libc6',
  'libpthread.so.0': 'libc6',
  'librt.so.1': 'libc6',
  'ld-linux-aarch64.so.1': 'libc6',
  'ld-linux-armhf.so.3': 'libc6',
  'ld-linux-x86-64.so.2': 'libc6',
  'libstdc++.so.6': 'libstdc++6',
  'libgcc_s.so.1': 'libgcc-s1',
};
/** libstdc++'s GLIBCXX_3.4.N symbol versions by the GCC release that introduced them (libstdc++6's version). */
const GLIBCXX_GCC = { 25: 8, 26: 9, 28: 10, 29: 11, 30: 12, 31: 13, 32: 13, 33: 14 };

/**
 * Depends for binaries of another architecture than the build machine's, where dpkg-shlibdeps cannot look the
 * libraries up: their NEEDED entries (readelf reads any ELF) mapped to packages, libc6 at the newest GLIBC_ version
 * they name, libstdc++6 at the GCC release of the newest GLIBCXX_ one. A library not in the table fails the build:
 * the package would install and not run.
 */
export function foreignLibraryDepends(binaries) {
  const packages = new Map();
  const newest = (re, text) =>
    [...text.matchAll(re)]
      .map((m) => m.slice(1).map((x) => Number(x ?? 0)))
      .sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2])
      .pop();
  for (const bin of binaries) {
    const r = spawnSync('readelf', ['-d', '-W', bin], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`readelf -d ${bin} failed (binutils): ${r.stderr || r.error?.message}`);
    for (const m of r.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)) {
      const pkg = SONAME_PACKAGES[m[1]];
      if (!pkg)
        throw new Error(`${bin} needs ${m[1]}, which no Depends of this package provides (packaging/deb-control.mjs)`);
      packages.set(pkg, packages.get(pkg) ?? '');
    }
    const text = readFileSync(bin).toString('latin1');
    const glibc = newest(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\0/g, text);
    const glibcxx = newest(/GLIBCXX_3\.4\.(\d+)()()\0/g, text);
    if (glibc && packages.has('libc6'))
      packages.set(
        'libc6',
        maxVersion(packages.get('libc6'), glibc[2] ? glibc.join('.') : glibc.slice(0, 2).join('.')),
      );
    if (glibcxx && packages.has('libstdc++6')) {
      const gcc = Object.entries(GLIBCXX_GCC)
        .filter(([n]) => Number(n) <= glibcxx[0])
        .pop()?.[1];
      if (gcc) packages.set('libstdc++6', maxVersion(packages.get('libstdc++6'), String(gcc)));
    }
  }
  return [...packages.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([p, v]) => (v ? `${p} (>= ${v})` : p))
    .join(', ');
}

function maxVersion(a, b) {
  if (!a) return b;
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++)
    if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) > (pb[i] ?? 0) ? a : b;
  return a;
}

/**
 * Root-owned (dpkg-deb --root-owner-group) with modes set here, not inherited from the build machine's umask or
 * checkout: directories 0755, files 0644 or, executable, 0755 (not addons: shared objects are loaded, not run); the
 * state directory 0711, the agent's own mode for it (run users reach their work directories through it, nothing
 * more), so that neither dpkg nor the agent keeps changing it.
 */
export function normalizeModes(root) {
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
  if (existsSync(join(root, 'var', 'lib', 'keystone'))) chmodSync(join(root, 'var', 'lib', 'keystone'), 0o711);
}
