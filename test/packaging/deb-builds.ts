// The packages under test, built by `packaging/build-deb.mjs` itself (gzip: the build is the staging, not the
// compression) and shared by the test files: kept in a directory named after a digest of everything that goes into
// them, so that a test file reuses what another built in this run (or an earlier one, if nothing changed) and never
// a package of older code.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { withFileLock } from '../support/file-lock.js';

const run = promisify(execFile);
const CACHE = join(tmpdir(), 'keystone-deb-test');
/** Staging runs npm ci and copies ~130 MiB: a minute on a busy 2-core machine. */
const BUILD_TIMEOUT_MS = 5 * 60_000;

export const PACKAGE_VERSION = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** A later version than PACKAGE_VERSION for Debian (`+` sorts after the release), for the upgrade. */
export const UPGRADE_VERSION = `${PACKAGE_VERSION}+upgrade.1`;

export interface BuiltDebs {
  /** The directory holding them (mounted into the containers). */
  dir: string;
  /** Version → file name in `dir`. */
  files: Record<string, string>;
}

function filesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesIn(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

/** The digest of the inputs: the built code, the packaging, the lock, the addon and the Node that gets bundled. */
function inputsDigest(): string {
  const h = createHash('sha256');
  const addon = join(PROJECT_ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  const inputs = [...filesIn(join(PROJECT_ROOT, 'dist')), ...filesIn(join(PROJECT_ROOT, 'bin')), ...filesIn(join(PROJECT_ROOT, 'packaging')), join(PROJECT_ROOT, 'package.json'), join(PROJECT_ROOT, 'package-lock.json'), addon]
    .filter((f) => !f.endsWith('.map') && !f.endsWith('.tsbuildinfo'))
    .sort();
  for (const f of inputs) h.update(relative(PROJECT_ROOT, f)).update('\0').update(readFileSync(f)).update('\0');
  const node = statSync(process.execPath);
  h.update(`${process.execPath} ${process.version} ${node.size} ${node.mtimeMs}`);
  return h.digest('hex').slice(0, 16);
}

/** Builds (or finds) one package per version. */
export async function buildDebs(versions: readonly string[]): Promise<BuiltDebs> {
  const digest = inputsDigest();
  const dir = join(CACHE, digest);
  mkdirSync(dir, { recursive: true });
  pruneOthers(digest);
  const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
  const files: Record<string, string> = {};
  for (const version of versions) {
    const file = `keystone_${version}_${arch}.deb`;
    files[version] = file;
    await withFileLock(join(dir, `${file}.lock`), { staleMs: BUILD_TIMEOUT_MS, timeoutMs: 2 * BUILD_TIMEOUT_MS }, () => existsSync(join(dir, file)), async () => {
      // Into a directory of its own first: a package is in `dir` only once it is whole.
      const out = join(dir, `.building-${version}`);
      rmSync(out, { recursive: true, force: true });
      await run(process.execPath, [join(PROJECT_ROOT, 'packaging', 'build-deb.mjs'), '--out', out, '--version', version, '--compress', 'gzip'], { timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }).catch(
        (e: Error & { stderr?: string }) => {
          throw new Error(`packaging/build-deb.mjs --version ${version} failed: ${e.stderr || e.message}`);
        },
      );
      execFileSync('mv', [join(out, file), join(dir, file)]);
      rmSync(out, { recursive: true, force: true });
    });
  }
  return { dir, files };
}

/** Packages of other inputs, an hour old (not another file's build in progress): ~50 MiB each. */
function pruneOthers(keep: string): void {
  for (const name of existsSync(CACHE) ? readdirSync(CACHE) : []) {
    const p = join(CACHE, name);
    if (name !== keep && Date.now() - statSync(p).mtimeMs > 3_600_000) rmSync(p, { recursive: true, force: true });
  }
}
