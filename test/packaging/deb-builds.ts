// The packages under test, built by `packaging/build-deb.mjs` itself (gzip: the build is the staging, not the
// compression) and shared by the test files: kept in a directory named after a digest of everything that goes into
// them and the architecture, so that a test file reuses what another built in this run (or an earlier one, if nothing
// changed) and never a package of older code.
//
// One machine builds amd64, arm64 and armhf; for amd64 and arm64 the build also writes keystone-node_<node>_<arch>.deb,
// the Node the agent runs on where Debian has none new enough; armhf depends on Debian 13's nodejs and has none. The
// state store's addon is built for the one Node ABI each architecture's test runs (TEST_ABI): the other ABIs are the
// same compile against other headers, and a first build compiles SQLite once per ABI (a minute each).
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { withFileLock } from '../support/file-lock.js';
import { hostArch, type DebianArch } from './debian-image.js';

const run = promisify(execFile);
const CACHE = join(tmpdir(), 'keystone-deb-test');
const BUILD_DEB = join(PROJECT_ROOT, 'packaging', 'build-deb.mjs');
/** Staging runs npm ci (or esbuild) and, for another architecture, fetches its Node and addon: minutes on a busy 2-core machine. */
const BUILD_TIMEOUT_MS = 10 * 60_000;

export const PACKAGE_VERSION = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
/** A later version than PACKAGE_VERSION for Debian (`+` sorts after the release), for the upgrade. */
export const UPGRADE_VERSION = `${PACKAGE_VERSION}+upgrade.1`;

export interface BuiltDebs {
  /** The directory holding them (mounted into the containers). */
  dir: string;
  arch: DebianArch;
  /** Version → keystone's file name in `dir`. */
  files: Record<string, string>;
  /** keystone-node's file name in `dir`, for the builds and architectures that have one. */
  node?: string;
}

/** The Node ABI the tests of each architecture run: keystone-node's Node 22, or Debian 13's nodejs 20 on armhf. */
const TEST_ABI: Record<DebianArch, string> = { amd64: '127', arm64: '127', armhf: '115' };

/** Where the Node the installed agent runs is, in the container: keystone-node's, else Debian's (armhf's `nodejs`). */
export function installedNode(debs: BuiltDebs): string {
  return debs.node ? '/usr/lib/keystone-node/bin/node' : '/usr/bin/node';
}

/** The `dpkg -i` arguments that install keystone `version` and, where there is one, keystone-node beside it. */
export function installArgs(debs: BuiltDebs, version: string): string {
  return [...(debs.node ? [`/debs/${debs.node}`] : []), `/debs/${debs.files[version]}`].join(' ');
}

function filesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesIn(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );
}

/** The digest of the inputs: the built code, the packaging, the lock, the addon and the Node that gets bundled. */
function inputsDigest(): string {
  const h = createHash('sha256');
  const addon = join(PROJECT_ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  const inputs = [
    ...filesIn(join(PROJECT_ROOT, 'dist')),
    ...filesIn(join(PROJECT_ROOT, 'bin')),
    ...filesIn(join(PROJECT_ROOT, 'packaging')),
    join(PROJECT_ROOT, 'package.json'),
    join(PROJECT_ROOT, 'package-lock.json'),
    addon,
  ]
    .filter((f) => existsSync(f) && !f.endsWith('.map') && !f.endsWith('.tsbuildinfo'))
    .sort();
  for (const f of inputs) h.update(relative(PROJECT_ROOT, f)).update('\0').update(readFileSync(f)).update('\0');
  const node = statSync(process.execPath);
  h.update(`${process.execPath} ${process.version} ${node.size} ${node.mtimeMs}`);
  return h.digest('hex').slice(0, 16);
}

/** Builds (or finds) one keystone package per version, for `arch` (default: this machine's), and its keystone-node. */
export async function buildDebs(versions: readonly string[], opts: { arch?: DebianArch } = {}): Promise<BuiltDebs> {
  const arch = opts.arch ?? (hostArch() as DebianArch);
  const digest = inputsDigest();
  const dir = join(CACHE, `${digest}-${arch}`);
  mkdirSync(dir, { recursive: true });
  pruneOthers(digest);
  const files: Record<string, string> = {};
  let node: string | undefined;
  for (const version of versions) {
    // The build's name for it is keystone_<Debian version>_<arch>.deb; what is in `dir` is found by a marker file
    // holding that name, written once the package is whole (a package is in `dir` only once it is whole).
    const marker = join(dir, `.built-${version}`);
    await withFileLock(
      join(dir, `${version}.lock`),
      { staleMs: BUILD_TIMEOUT_MS, timeoutMs: 2 * BUILD_TIMEOUT_MS },
      () => existsSync(marker),
      async () => {
        const out = join(dir, `.building-${version}`);
        rmSync(out, { recursive: true, force: true });
        const args = [
          BUILD_DEB,
          '--arch',
          arch,
          '--abi',
          TEST_ABI[arch],
          '--out',
          out,
          '--version',
          version,
          '--compress',
          'gzip',
        ];
        await run(process.execPath, args, { timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }).catch(
          (e: Error & { stderr?: string }) => {
            throw new Error(`packaging/build-deb.mjs ${args.slice(1).join(' ')} failed: ${e.stderr || e.message}`);
          },
        );
        const built = readdirSync(out).filter((f) => f.endsWith(`_${arch}.deb`));
        const main = built.find((f) => f.startsWith('keystone_'));
        if (!main)
          throw new Error(
            `packaging/build-deb.mjs ${args.slice(1).join(' ')} wrote no keystone_*_${arch}.deb (it wrote ${built.join(', ') || 'nothing'})`,
          );
        for (const f of built) if (!existsSync(join(dir, f))) renameSync(join(out, f), join(dir, f));
        execFileSync('sh', ['-c', 'printf %s "$2" > "$1.tmp" && mv "$1.tmp" "$1"', 'sh', marker, built.join('\n')]);
        rmSync(out, { recursive: true, force: true });
      },
    );
    const built = readFileSync(marker, 'utf8').split('\n');
    files[version] = built.find((f) => f.startsWith('keystone_'))!;
    node ??= built.find((f) => f.startsWith('keystone-node_'));
  }
  return { dir, arch, files, ...(node ? { node } : {}) };
}

/** Packages of other inputs, an hour old (not another file's build in progress): ~50 MiB each. */
function pruneOthers(keep: string): void {
  for (const name of existsSync(CACHE) ? readdirSync(CACHE) : []) {
    const p = join(CACHE, name);
    if (!name.startsWith(`${keep}-`) && Date.now() - statSync(p).mtimeMs > 3_600_000)
      rmSync(p, { recursive: true, force: true });
  }
}
