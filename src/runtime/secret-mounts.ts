// Where a container sees its secret files (SPEC §16): `path = "db_password"` at /run/secrets/db_password, as Docker and
// Compose put secrets, or at an absolute path the recipe gives; each a read-only bind of the file the agent wrote.
import { posix } from 'node:path';
import type { PlacedSecrets } from './secret-files.js';

/** The directory a plain secret name is mounted under. */
export const CONTAINER_SECRETS_DIR = '/run/secrets';

export interface SecretMount {
  /** The file on the host (secret-files.ts). */
  source: string;
  /** Where the container sees it. */
  target: string;
}

/** The container path of a [[lifecycle.run.secrets]] entry's `path`. */
export function containerSecretPath(path: string): string {
  return path.startsWith('/') ? path : posix.join(CONTAINER_SECRETS_DIR, path);
}

export function secretMounts(placed: PlacedSecrets | undefined): SecretMount[] {
  return (placed?.files ?? []).map((f) => ({ source: f.host, target: containerSecretPath(f.path) }));
}
