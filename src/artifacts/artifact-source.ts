// Where an artifact's bytes come from, decided from its URI alone and before any I/O (SPEC §2: https, http,
// file, or a path relative to the recipe inside the repository).
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapesRepository } from '../core/recipe.js';
import { ArtifactError } from './artifact-error.js';

/** A parsed artifact location. */
export type ArtifactSource =
  | { kind: 'http'; url: URL }
  | { kind: 'file'; path: string }
  | { kind: 'repository'; path: string };

/** Parses `uri` as written in `recipeFile` (repository-relative); refuses other schemes and escaping paths. */
export function resolveArtifactSource(uri: string, recipeFile: string): ArtifactSource {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    const path = posix.join(posix.dirname(recipeFile), uri);
    if (uri.startsWith('/') || escapesRepository(path))
      throw new ArtifactError('KS_ARTIFACT_BAD_URI', `artifact "${uri}" points outside the repository`, { uri });
    return { kind: 'repository', path };
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new ArtifactError('KS_ARTIFACT_BAD_URI', `artifact URI "${redactUri(uri)}" is not a valid URL`, { uri: redactUri(uri) });
  }
  if (scheme === 'http' || scheme === 'https') return { kind: 'http', url };
  if (scheme === 'file') {
    if (url.host !== '' && url.host !== 'localhost')
      throw new ArtifactError('KS_ARTIFACT_BAD_URI', `file URI "${uri}" names a host; use file:///absolute/path`, { uri });
    try {
      return { kind: 'file', path: fileURLToPath(url) };
    } catch (e) {
      throw new ArtifactError('KS_ARTIFACT_BAD_URI', `file URI "${uri}": ${(e as Error).message}`, { uri });
    }
  }
  throw new ArtifactError('KS_ARTIFACT_BAD_URI', `unsupported artifact scheme "${scheme}:" in "${redactUri(uri)}"`, { uri: redactUri(uri) });
}

/** The URI with any user:password removed, for messages and reports: recipes may embed a download token. */
export function redactUri(uri: string): string {
  try {
    const url = new URL(uri);
    if (url.username === '' && url.password === '') return uri;
    url.username = '***';
    url.password = '';
    return url.toString();
  } catch {
    return uri;
  }
}
