// Node new enough for this package: the range is package.json's `engines.node` (one source of truth).
import semver from 'semver';
import { packageManifest } from '../package-manifest.js';
import { fail, pass, type CheckResult } from './check-result.js';

/** `>=20.19`, from package.json. */
export function requiredNodeRange(): string {
  return packageManifest().engines.node;
}

export function checkNodeVersion(version: string, range: string = requiredNodeRange()): CheckResult {
  if (semver.satisfies(version, range)) return pass('node-version', `Node ${version} (keystone needs ${range})`);
  return fail(
    'node-version',
    `Node ${version} is older than keystone needs (${range})`,
    `install Node ${range.replace(/^>=\s*/, '')} or later (e.g. from nodejs.org or NodeSource) and run the agent with it`,
  );
}
