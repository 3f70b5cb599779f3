// keystone-node_<version>_<arch>.deb: the Node.js release build pinned in packaging/node-runtime.json (from the npm
// registry's node-linux-* package, integrity checked), in /usr/lib/keystone-node, for systems whose nodejs is older
// than 20.19. Only the binary and its licence: no npm, no headers, nothing on PATH.
import { copyFileSync, chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installedSizeKiB, md5sums, normalizeModes, renderControl } from './deb-control.mjs';
import { checkElfArch } from './elf-check.mjs';
import { npmPackage } from './npm-tarball.mjs';
import process from 'node:process';

/**
 * Builds it into `out`; returns `{ deb, depends, node }` where `node` is the staged binary's copy in the cache (for
 * running the bundle with it on this machine). `strip` is the strip command for the architecture (its symbol table
 * is ~12 MB nothing needs at run time; addons link against the dynamic symbols, which stay), or undefined.
 */
export function buildNodeDeb({ arch, runtime, out, compress, maintainer, strip, libraryDepends }) {
  const { version, packages } = runtime.runtime;
  const pkg = npmPackage({ ...packages[arch], version });
  const root = mkdtempSync(join(tmpdir(), 'keystone-node-deb-'));
  try {
    chmodSync(root, 0o755);
    const bin = join(root, 'usr', 'lib', 'keystone-node', 'bin');
    mkdirSync(bin, { recursive: true });
    const node = join(bin, 'node');
    copyFileSync(join(pkg, 'bin', 'node'), node);
    if (strip) {
      const r = spawnSync(strip, [node], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${strip} ${node} failed: ${r.stderr || r.error?.message}`);
    }
    const doc = join(root, 'usr', 'share', 'doc', 'keystone-node');
    mkdirSync(doc, { recursive: true });
    copyFileSync(join(pkg, 'LICENSE'), join(doc, 'copyright'));
    normalizeModes(root);
    checkElfArch(root, arch);
    const debian = join(root, 'DEBIAN');
    mkdirSync(debian);
    const control = renderControl(readFileSync(join(import.meta.dirname, 'debian', 'node-control'), 'utf8'), {
      VERSION: version,
      ARCH: arch,
      MAINTAINER: maintainer,
      INSTALLED_SIZE: installedSizeKiB(root),
      SHLIBS_DEPENDS: libraryDepends(arch, [node]),
      NODE_VERSION: version,
    });
    writeFileSync(join(debian, 'control'), control);
    writeFileSync(join(debian, 'md5sums'), md5sums(root));
    mkdirSync(out, { recursive: true });
    const deb = join(out, `keystone-node_${version}_${arch}.deb`);
    execFileSync('dpkg-deb', ['--root-owner-group', ...compress, '--build', root, deb], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    // The staged binary, kept for checkRuntime (the root is removed).
    const kept = join(tmpdir(), `keystone-node-${version}-${arch}-${process.pid}`);
    copyFileSync(node, kept);
    chmodSync(kept, 0o755);
    return { deb, depends: /^Depends: (.*)$/m.exec(control)?.[1], node: kept };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
