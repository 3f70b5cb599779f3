// Staging a new agent beside the running one (SPEC §17): the package is fetched and checked against the signed
// sha256 (artifacts/fetch-artifact.ts, as a recipe's artifacts are), its control fields read, its usr/lib/keystone
// extracted into the agent's home, and the staged bundle run once (`--version`) with the Node this agent runs on:
// a package that cannot even say its version is refused here, before anything is switched.
import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { debianVersionOf, type AgentPackage, type DebArch } from '../core/agent-section.js';
import { FLEET_FILE } from '../core/fleet.js';
import { fetchArtifact } from '../artifacts/fetch-artifact.js';
import { isArtifactError } from '../artifacts/artifact-error.js';
import type { RepoReader } from '../source/repo-reader.js';
import type { AgentHome } from './agent-home.js';
import { AgentUpdateError } from './agent-update-error.js';

const run = promisify(execFile);

/** A .deb of Keystone is ~2 MB; a bound well above, so that a wrong URI cannot fill the disk. */
const MAX_PACKAGE_BYTES = 256 * 1024 ** 2;
/** The file in a staged version that says which package it came from. */
const PACKAGE_MARK = '.package-sha256';
/** A package being unpacked, beside the versions (agent-versions.ts's pruneVersions removes these too). */
const STAGING_PREFIX = '.staging-';

export interface StageOptions {
  home: AgentHome;
  pkg: AgentPackage;
  version: string;
  arch: DebArch;
  /** Serves a package committed in the repository (a uri without a scheme). */
  reader: RepoReader;
  cacheDir: string;
  /** The Node that runs the staged bundle's `--version` (this agent's: the launcher picks the same one). */
  node: string;
}

/** The staged version's directory (a bundle as /usr/lib/keystone holds it). Throws AgentUpdateError. */
export async function stageAgentPackage(o: StageOptions): Promise<string> {
  const sha256 = o.pkg.sha256.toLowerCase();
  const dest = join(o.home.versions, o.version);
  if (existsSync(join(dest, PACKAGE_MARK)) && readFileSync(join(dest, PACKAGE_MARK), 'utf8').trim() === sha256)
    return dest;
  let path: string;
  try {
    path = (
      await fetchArtifact({
        uri: o.pkg.uri,
        sha256,
        recipeFile: FLEET_FILE,
        reader: o.reader,
        cacheDir: o.cacheDir,
        maxBytes: MAX_PACKAGE_BYTES,
      })
    ).path;
  } catch (e) {
    if (!isArtifactError(e)) throw e;
    const code = e.code === 'KS_ARTIFACT_DIGEST_MISMATCH' ? 'KS_AGENT_PACKAGE_DIGEST' : 'KS_AGENT_PACKAGE_INVALID';
    throw new AgentUpdateError(code, `the package for ${o.arch}: ${e.message}`);
  }
  const fields = await control(path);
  if (fields.Package !== 'keystone')
    throw new AgentUpdateError(
      'KS_AGENT_PACKAGE_INVALID',
      `the package for ${o.arch} is "${fields.Package ?? '?'}", not keystone`,
    );
  if (fields.Architecture !== o.arch)
    throw new AgentUpdateError(
      'KS_AGENT_PACKAGE_INVALID',
      `the package for ${o.arch} is built for ${fields.Architecture ?? '?'}`,
    );
  // The package's own version, as dpkg and apt would see it, is the one [agent] names (in Debian's form).
  const debVersion = debianVersionOf(o.version);
  if (fields.Version !== debVersion)
    throw new AgentUpdateError(
      'KS_AGENT_PACKAGE_VERSION',
      `the package for ${o.arch} is version ${fields.Version ?? '?'}, not ${debVersion} as [agent] version = "${o.version}" says`,
    );

  // Readable by all (keystonectl, run by anyone, runs the version in use), writable by root only.
  mkdirSync(o.home.versions, { recursive: true, mode: 0o755 });
  removeStaleStaging(o.home.versions);
  // Beside its final name, in the same directory: renamed into place whole once it ran, or removed.
  const temp = mkdtempSync(join(o.home.versions, STAGING_PREFIX));
  try {
    try {
      await run('dpkg-deb', ['-x', path, temp]);
    } catch (e) {
      throw new AgentUpdateError(
        'KS_AGENT_PACKAGE_INVALID',
        `the package for ${o.arch} does not unpack: ${firstLine(e)}`,
      );
    }
    const lib = join(temp, 'usr', 'lib', 'keystone');
    // Plain directories and files only, none writable by others, no set-id bits: root runs this tree, and a link in
    // it (usr/lib/keystone -> /tmp/x) would make it run what was never checked.
    checkTree(temp, o.arch);
    if (!existsSync(join(lib, 'keystone.mjs')))
      throw new AgentUpdateError(
        'KS_AGENT_PACKAGE_INVALID',
        `the package for ${o.arch} holds no usr/lib/keystone/keystone.mjs`,
      );
    let said: string;
    try {
      said = (
        await run(o.node, [join(lib, 'keystone.mjs'), '--version'], {
          timeout: 120_000,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        })
      ).stdout.trim();
    } catch (e) {
      throw new AgentUpdateError(
        'KS_AGENT_PACKAGE_INVALID',
        `the agent of the package for ${o.arch} does not run on this device: ${firstLine(e)}`,
      );
    }
    if (said !== `keystone ${o.version}`)
      throw new AgentUpdateError(
        'KS_AGENT_PACKAGE_INVALID',
        `the package for ${o.arch} says "${said}", not "keystone ${o.version}" as [agent] version does`,
      );
    writeFileSync(join(lib, PACKAGE_MARK), `${sha256}\n`, { mode: 0o600 });
    rmSync(dest, { recursive: true, force: true });
    renameSync(lib, dest);
    return dest;
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/**
 * The .staging-* directories a staging cut short left (the agent killed, or the power lost, while dpkg-deb unpacked):
 * nothing runs from them, and only one agent stages at a time, so any found before a staging starts is removed.
 */
export function removeStaleStaging(versions: string): string[] {
  let names: string[];
  try {
    names = readdirSync(versions);
  } catch {
    return [];
  }
  const stale = names.filter((n) => n.startsWith(STAGING_PREFIX));
  for (const name of stale) rmSync(join(versions, name), { recursive: true, force: true });
  return stale;
}

/** Every entry of the unpacked package: a directory or a regular file; modes made at most 0755 (no set-id, no write by others). */
function checkTree(dir: string, arch: string, root = dir): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (!st.isDirectory() && !st.isFile())
      throw new AgentUpdateError(
        'KS_AGENT_PACKAGE_INVALID',
        `the package for ${arch} holds ${path.slice(root.length)}, which is not a plain file or directory`,
      );
    chmodSync(path, st.mode & 0o755);
    if (st.isDirectory()) checkTree(path, arch, root);
  }
}

async function control(path: string): Promise<Record<string, string>> {
  let out: string;
  try {
    out = (await run('dpkg-deb', ['-f', path, 'Package', 'Architecture', 'Version'])).stdout;
  } catch (e) {
    throw new AgentUpdateError('KS_AGENT_PACKAGE_INVALID', `not a Debian package: ${firstLine(e)}`);
  }
  const fields: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const m = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
    if (m) fields[m[1]!] = m[2]!.trim();
  }
  return fields;
}

function firstLine(e: unknown): string {
  const err = e as { stderr?: string; message?: string };
  return (err.stderr?.trim() || err.message || String(e)).split('\n')[0]!.slice(0, 300);
}
