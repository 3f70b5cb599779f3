// How the agent gets a revision's artifacts (run-agent.ts wires them): the installer, loaded only when a component first
// has some, and the prefetch's download into the same cache (SPEC §19). Apart from the composition root: what they
// do, not how they are wired.
import { join } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import type { ArtifactInstallerOptions, InstallArtifactsFn } from '../runtime/artifact-installer.js';
import type { RepoReader } from '../source/repo-reader.js';
import { ARTIFACT_CACHE_DIR } from '../state-dir/layout.js';
import { safeDirectory } from '../state-dir/safe-path.js';

/** 2 GiB: artifacts are programs and images, not datasets. */
export const MAX_ARTIFACT_BYTES = 2 * 1024 ** 3;

/**
 * Artifacts (fetch, verify, unpack: tar, yauzl) are loaded when a component first has some to install: most devices
 * run programs already on disk.
 */
export function lazyArtifactInstaller(opts: ArtifactInstallerOptions): InstallArtifactsFn {
  let installer: Promise<InstallArtifactsFn> | undefined;
  return async (c, workDir) => {
    installer ??= import('../runtime/artifact-installer.js').then((m) => m.artifactInstaller(opts));
    return (await installer)(c, workDir);
  };
}

/** The prefetch's download of a component's artifacts into the cache, read from `reader()`'s revision; its bytes. */
export function fetchArtifactsOf(
  stateDir: string,
  artifactReader: () => RepoReader | undefined,
): (c: DesiredComponent) => Promise<number> {
  return async (c) => {
    const { fetchArtifact } = await import('../artifacts/fetch-artifact.js');
    // The cache is the agent's alone, as the installer checks it (artifact-installer.ts).
    safeDirectory(join(stateDir, ARTIFACT_CACHE_DIR), { mode: 0o700 });
    let bytes = 0;
    for (const a of c.recipe.artifacts)
      bytes += (
        await fetchArtifact({
          uri: a.uri,
          sha256: a.sha256,
          recipeFile: c.recipePath,
          reader: artifactReader()!,
          cacheDir: join(stateDir, ARTIFACT_CACHE_DIR),
          maxBytes: MAX_ARTIFACT_BYTES,
        })
      ).bytes;
    return bytes;
  };
}
