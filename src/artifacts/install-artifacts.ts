// Puts a recipe's artifacts into its work directory, all or nothing: every artifact is fetched, verified and
// unpacked into a staging directory first, and the work directory is only touched once all of them succeeded.
import { copyFile, chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { basename, dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Recipe } from '../core/recipe.js';
import type { RepoReader } from '../source/repo-reader.js';
import { ArtifactError } from './artifact-error.js';
import { redactUri } from './artifact-source.js';
import { fetchArtifact, type ProgressFn } from './fetch-artifact.js';
import { mergeTree } from './merge-tree.js';
import { unpackArchive } from './unpack-archive.js';
import type { UnpackLimits } from './unpack-limits.js';

/** One `[[artifacts]]` entry of a recipe, as the schema outputs it. */
export type ArtifactSpec = Pick<Recipe['artifacts'][number], 'uri' | 'sha256' | 'unpack'>;

/** Where the artifacts come from and go to. */
export interface InstallArtifactsOptions {
  /** The recipe's repository-relative path, for relative artifact URIs. */
  recipeFile: string;
  reader: RepoReader;
  cacheDir: string;
  workDir: string;
  /** Size cap of each artifact as downloaded. */
  maxBytes: number;
  unpackLimits?: Partial<UnpackLimits>;
  timeoutMs?: number;
  /** Download progress, per artifact (by its URI, credentials removed). */
  onProgress?: (uri: string, ...progress: Parameters<ProgressFn>) => void;
}

/** What was installed, for the reconcile report. */
export interface InstalledArtifact {
  uri: string;
  sha256: string;
  /** The verified cache entry it came from. */
  cachePath: string;
  cached: boolean;
  bytes: number;
  /** Path in the work directory: the file's base name, or "." for an unpacked archive. */
  installedAs: string;
}

/** Fetches (through the cache) and installs `artifacts` into `opts.workDir`; throws ArtifactError, leaving it untouched. */
export async function installArtifacts(artifacts: readonly ArtifactSpec[], opts: InstallArtifactsOptions): Promise<InstalledArtifact[]> {
  const workDir = resolve(opts.workDir);
  // 1. Names and digests: every artifact must be fetchable and verified before anything is staged.
  const names = artifacts.map((a) => (a.unpack ? '.' : artifactFileName(a.uri, opts.recipeFile)));
  const fetched: InstalledArtifact[] = [];
  for (const [i, a] of artifacts.entries()) {
    const uri = redactUri(a.uri);
    const installedAs = names[i] as string;
    const r = await fetchArtifact({
      uri: a.uri,
      sha256: a.sha256,
      recipeFile: opts.recipeFile,
      reader: opts.reader,
      cacheDir: opts.cacheDir,
      maxBytes: opts.maxBytes,
      timeoutMs: opts.timeoutMs,
      onProgress: opts.onProgress && ((received, total) => opts.onProgress?.(uri, received, total)),
    });
    fetched.push({ uri, sha256: a.sha256.toLowerCase(), cachePath: r.path, cached: r.cached, bytes: r.bytes, installedAs });
  }
  if (fetched.length === 0) return fetched;

  // 2. Stage the complete result next to the work directory (same filesystem), in recipe order: later wins.
  await mkdir(dirname(workDir), { recursive: true });
  const stage = await mkdtemp(join(dirname(workDir), `.${basename(workDir)}.install-`));
  try {
    const root = join(stage, 'root');
    await mkdir(root, { mode: 0o755 });
    for (const [i, a] of fetched.entries()) {
      const part = join(stage, `part-${i}`);
      if (a.installedAs === '.') {
        await unpackArchive(a.cachePath, part, opts.unpackLimits);
      } else {
        await mkdir(part, { mode: 0o755 });
        const file = join(part, a.installedAs);
        await copyFile(a.cachePath, file);
        // Downloads carry no permissions; the recipe's install script sets +x where it needs it (SPEC §2).
        await chmod(file, 0o644);
      }
      await mergeTree(part, root);
    }
    // 3. Only now is the work directory touched: each file appears by rename, whole.
    await mergeTree(root, workDir);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  return fetched;
}

/** The base name a copied (not unpacked) artifact gets in the work directory: the last segment of its URI. */
export function artifactFileName(uri: string, recipeFile: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase();
  let name: string | undefined;
  try {
    if (scheme === undefined) name = posix.basename(posix.join(posix.dirname(recipeFile), uri));
    else if (scheme === 'file') name = basename(fileURLToPath(uri));
    else name = decodeURIComponent(new URL(uri).pathname.split('/').pop() ?? '');
  } catch {
    name = undefined;
  }
  if (name === undefined || name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name))
    throw new ArtifactError('KS_ARTIFACT_BAD_URI', `artifact ${redactUri(uri)} has no usable file name; name the file in its URI or set unpack = true`, {
      uri: redactUri(uri),
    });
  return name;
}
