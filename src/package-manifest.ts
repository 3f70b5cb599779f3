// The package's own files: package.json (version, engines), the dashboard's built files and the state store's native
// addons. Run from the repository they are around dist/; run from the bundle the package installs
// (packaging/bundle.mjs: one directory of .mjs files) they are beside it, and the bundler says so by defining
// __KEYSTONE_BUNDLE__.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

declare const __KEYSTONE_BUNDLE__: boolean | undefined;

// Not import.meta.dirname (Node 20.11): an older Node must get as far as the bundle's own refusal of it.
const here = dirname(fileURLToPath(import.meta.url));

/** The bundle's directory (every output file of packaging/bundle.mjs is in it), or undefined when run from dist/. */
export const bundleDir: string | undefined =
  typeof __KEYSTONE_BUNDLE__ !== 'undefined' && __KEYSTONE_BUNDLE__ ? here : undefined;

/** Where package.json and the other files of the package are: the bundle's directory, or the project above dist/. */
export const packageRoot: string = bundleDir ?? join(here, '..');

export interface PackageManifest {
  version: string;
  engines: { node: string };
}

let cached: PackageManifest | undefined;

/** package.json, read once: the one source of the version and the Node range. */
export function packageManifest(): PackageManifest {
  cached ??= JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as PackageManifest;
  return cached;
}

/** The package's version, for `--version`, the API and reports: package.json's. */
export function packageVersion(): string {
  return packageManifest().version;
}
