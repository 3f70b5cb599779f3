// The package's version, for `--version` and the API: read from package.json beside dist/ (one source of truth).
import { readFileSync } from 'node:fs';

let cached: string | undefined;

export function packageVersion(): string {
  cached ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return cached;
}
