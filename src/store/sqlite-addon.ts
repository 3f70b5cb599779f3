// Which compiled better-sqlite3 the state store loads. Run from the repository: the one `npm ci` built in
// node_modules (better-sqlite3 finds it itself). Run from the package's bundle, which has no node_modules: one addon
// per Node ABI the package supports, beside the bundle (a Debian nodejs 20 and keystone-node's Node 22 load
// different ones), named by addonFileName; the bundle's entry checks that this Node's is there before anything runs.
import { join } from 'node:path';
import { bundleDir } from '../package-manifest.js';

/** `better_sqlite3-linux-arm64-abi127.node`: the platform, the CPU and Node's modules version (its ABI). */
export function addonFileName(platform: string, arch: string, modules: string): string {
  return `better_sqlite3-${platform}-${arch}-abi${modules}.node`;
}

/** better-sqlite3's constructor option naming the addon to load, or nothing (its own lookup) outside the bundle. */
export function sqliteNativeBinding(): { nativeBinding?: string } {
  if (!bundleDir) return {};
  return {
    nativeBinding: join(bundleDir, 'native', addonFileName(process.platform, process.arch, process.versions.modules)),
  };
}
