// A package from the npm registry, unpacked: `npm pack` (npm's cache and registry settings, so a build machine
// offline with a warm cache works), its tarball checked against the integrity pinned in packaging/node-runtime.json
// every time it is used and unpacked afresh, so that nothing in the build cache is trusted for having been there.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';

/** Where packages, Node builds and built addons are kept between builds (KEYSTONE_PACKAGE_CACHE moves it). */
export function buildCache() {
  const dir =
    process.env.KEYSTONE_PACKAGE_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'keystone-package');
  mkdirSync(dir, { recursive: true });
  return dir;
}

function verify(tgz, { name, version, integrity }) {
  const [algorithm, expected] = integrity.split('-', 2);
  const got = createHash(algorithm).update(readFileSync(tgz)).digest('base64');
  if (got !== expected)
    throw new Error(`${name}@${version} is not the pinned one: ${algorithm}-${got}, expected ${integrity} (${tgz})`);
}

/** `name@version` unpacked (its `package/` directory), its tarball fetched once, verified and unpacked each call. */
export function npmPackage(spec) {
  const { name, version, integrity } = spec;
  const key = createHash('sha256').update(integrity).digest('hex').slice(0, 12);
  const base = join(buildCache(), 'npm', `${name}-${version}-${key}`);
  const tgz = `${base}.tgz`;
  if (!existsSync(tgz)) {
    const work = `${base}.partial-${process.pid}`;
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    try {
      const r = spawnSync(
        'npm',
        ['pack', `${name}@${version}`, '--pack-destination', work, '--silent', '--prefer-offline'],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
      if (r.status !== 0) throw new Error(`npm pack ${name}@${version} failed: ${r.stderr || r.error?.message}`);
      const packed = join(work, r.stdout.trim().split('\n').pop());
      verify(packed, spec);
      renameSync(packed, tgz);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  verify(tgz, spec);
  // One directory per process: two builds at once each unpack their own.
  const dir = `${base}-${process.pid}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', dir, '--no-same-owner']);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'package');
}
