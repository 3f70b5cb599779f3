// Binds the artifacts module to the runtime's injected `(component, workDir)` signature.
import { installArtifacts, type InstallArtifactsOptions } from '../artifacts/install-artifacts.js';
import type { DesiredComponent } from '../core/desired-state.js';
import type { RepoReader } from '../source/repo-reader.js';
import { safeDirectory } from '../state-dir/safe-path.js';

/** What ProcessRuntime calls to put a component's artifacts into a directory (throws ArtifactError). */
export type InstallArtifactsFn = (c: DesiredComponent, workDir: string) => Promise<void>;

/** The artifact options that do not depend on the component; `reader` is asked per call, since revisions change. */
export type ArtifactInstallerOptions = Omit<InstallArtifactsOptions, 'workDir' | 'recipeFile' | 'reader'> & {
  reader: (c: DesiredComponent) => RepoReader;
};

/** An InstallArtifactsFn over `installArtifacts` (fetch through the cache, verify, unpack, all or nothing). */
export function artifactInstaller(opts: ArtifactInstallerOptions): InstallArtifactsFn {
  const { reader, ...rest } = opts;
  return async (c, workDir) => {
    // The cache is the agent's: reached without a link, through directories no other user can change, so that the
    // downloads, renames and copies in it by name stay in it (KS_STATE_DIR_UNSAFE otherwise).
    safeDirectory(rest.cacheDir, { mode: 0o700 });
    await installArtifacts(c.recipe.artifacts, { ...rest, reader: reader(c), recipeFile: c.recipePath, workDir });
  };
}
