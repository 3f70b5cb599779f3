// The package's version, for `--version` and the API: package.json's (one source of truth, src/package-manifest.ts).
import { packageManifest } from '../package-manifest.js';

export function packageVersion(): string {
  return packageManifest().version;
}
