// DEBIAN/control's computed fields and DEBIAN/md5sums, from the staged tree.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
    .flatMap((b) => [...readFileSync(b).toString('latin1').matchAll(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\0/g)])
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
    const r = spawnSync('dpkg-shlibdeps', ['-O', '--warnings=0', ...binaries.map((b) => `-e${b}`)], { cwd: dir, encoding: 'utf8' });
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
