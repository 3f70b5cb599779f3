// A package laid out as packaging/build-deb.mjs lays out keystone's (DEBIAN/control, usr/lib/keystone/keystone.mjs),
// built by the real dpkg-deb, with a bundle that only says its version: what the agent-update tests stage and run.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { debArchOf, debianVersionOf } from '../../src/core/agent-section.js';

export const ARCH = debArchOf(process.arch) ?? 'amd64';

export interface FakeDeb {
  path: string;
  uri: string;
  sha256: string;
}

export interface FakeDebOptions {
  version: string;
  arch?: string;
  /** What `--version` prints (default `keystone VERSION`). */
  says?: string;
  /** The control file's Version (default: `version` in Debian's form, as packaging/build-deb.mjs writes it). */
  debVersion?: string;
  /** The control file's Package (default keystone). */
  name?: string;
  /** keystone.mjs's mode. */
  mode?: number;
  /** keystone.mjs itself (default: prints `says` for --version, exits 1 otherwise). */
  bundle?: string;
}

export function fakeDeb(dir: string, o: FakeDebOptions): FakeDeb {
  const root = mkdtempSync(join(dir, 'deb-'));
  mkdirSync(join(root, 'DEBIAN'));
  // A random description: two builds of one version are two packages (two sha256), as a rebuild is.
  writeFileSync(
    join(root, 'DEBIAN', 'control'),
    `Package: ${o.name ?? 'keystone'}\nVersion: ${o.debVersion ?? debianVersionOf(o.version)}\nArchitecture: ${o.arch ?? ARCH}\nMaintainer: test <t@example.com>\nDescription: test ${Math.random()}\n`,
  );
  const lib = join(root, 'usr', 'lib', 'keystone');
  mkdirSync(lib, { recursive: true });
  const says = o.says ?? `keystone ${o.version}`;
  writeFileSync(
    join(lib, 'keystone.mjs'),
    o.bundle ??
      `if (process.argv.includes('--version')) { console.log(${JSON.stringify(says)}); process.exit(0); }\nprocess.exit(1);\n`,
  );
  if (o.mode !== undefined) chmodSync(join(lib, 'keystone.mjs'), o.mode);
  const path = join(dir, `keystone_${o.version}_${o.arch ?? ARCH}-${Math.random().toString(16).slice(2)}.deb`);
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-b', root, path], { stdio: 'ignore' });
  return { path, uri: `file://${path}`, sha256: createHash('sha256').update(readFileSync(path)).digest('hex') };
}
