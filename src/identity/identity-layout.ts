// Where a device's identity lives in its state directory, and the modes its files have (device-keys.ts says why).
import { join, resolve } from 'node:path';
import { AGE_KEY_FILE, DEVICE_FILE, IDENTITY_DIR, REPORT_KEY_FILE, REPORT_PUB_FILE } from '../state-dir/layout.js';

// The names are state-dir/layout.ts's. The marker (DEVICE_FILE) is beside identity/ rather than in it: a wiped or
// uncopied identity/ leaves it behind.
export { AGE_KEY_FILE, DEVICE_FILE, IDENTITY_DIR, REPORT_KEY_FILE, REPORT_PUB_FILE };

export const DIR_MODE = 0o700;
export const SECRET_MODE = 0o600;
export const PUBLIC_MODE = 0o644;

export interface IdentityPaths {
  dir: string;
  reportKey: string;
  reportPub: string;
  ageKey: string;
  marker: string;
}

export function identityPaths(stateDir: string): IdentityPaths {
  const dir = join(resolve(stateDir), IDENTITY_DIR);
  return {
    dir,
    reportKey: join(dir, REPORT_KEY_FILE),
    reportPub: join(dir, REPORT_PUB_FILE),
    ageKey: join(dir, AGE_KEY_FILE),
    marker: join(resolve(stateDir), DEVICE_FILE),
  };
}
