// Making a device's identity (device-keys.ts): the three files in a directory of their own, renamed into place whole.
import { randomUUID } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { agentUid } from '../state-dir/safe-path.js';
import { formatPublicKey, formatSecretKey, generateKey } from '../trust/minisign.js';
import { ageRecipientOf, formatAgeIdentityFile, type AgeIdentity } from './age-identity-file.js';
import { bech32Encode } from './bech32.js';
import { syncDirectory, writeNew } from './durable-write.js';
import {
  AGE_KEY_FILE,
  DIR_MODE,
  IDENTITY_DIR,
  PUBLIC_MODE,
  REPORT_KEY_FILE,
  REPORT_PUB_FILE,
  SECRET_MODE,
  type IdentityPaths,
} from './identity-layout.js';

/** A temporary identity directory this old was left by a process that died making it. */
const STALE_TEMP_MS = 60_000;

const TEMP_PREFIX = `.${IDENTITY_DIR}.`;

/** The three files in a directory of their own, renamed into place whole; another process's identity made first wins. */
export async function createIdentity(
  paths: IdentityPaths,
  o: { now: () => number; randomBytes: (n: number) => Uint8Array },
): Promise<void> {
  const stateDir = resolve(paths.dir, '..');
  // Against the clock the directories' times come from, the system's, not the injected one: a clock set years ahead
  // would take a fresh directory that another maker is filling for one a dead process left.
  removeStaleTemps(stateDir, Date.now());
  const report = generateKey(o.randomBytes);
  const age = newAgeIdentity(o.randomBytes);
  const temp = join(stateDir, `${TEMP_PREFIX}${randomUUID()}.tmp`);
  mkdirSync(temp, { mode: DIR_MODE });
  try {
    writeNew(join(temp, REPORT_KEY_FILE), await formatSecretKey(report, undefined, o.randomBytes), SECRET_MODE);
    writeNew(join(temp, REPORT_PUB_FILE), formatPublicKey(report), PUBLIC_MODE);
    writeNew(join(temp, AGE_KEY_FILE), formatAgeIdentityFile(age, o.now()), SECRET_MODE);
    syncDirectory(temp);
    try {
      // Onto nothing, or onto an empty identity/ (checked already): both are replaced. A full one is another's.
      renameSync(temp, paths.dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
    }
    syncDirectory(stateDir);
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** What a process that died while making an identity left (secret keys, in a 0700 directory of the agent's). */
function removeStaleTemps(stateDir: string, nowMs: number): void {
  for (const name of readdirSync(stateDir)) {
    if (!name.startsWith(TEMP_PREFIX) || !name.endsWith('.tmp')) continue;
    const st = lstatSync(join(stateDir, name), { throwIfNoEntry: false });
    if (st && st.uid === agentUid() && nowMs - st.mtimeMs > STALE_TEMP_MS)
      rmSync(join(stateDir, name), { recursive: true, force: true });
  }
}

/**
 * A new X25519 identity as age-keygen makes one: 32 random bytes (X25519 clamps them when they are used), bech32 in
 * capitals; its recipient by node:crypto (age-identity-file.ts), as every later start reads it. Not by age-encryption,
 * which a device's first start would otherwise load and hold for good (bench/footprint.bench.ts);
 * test/identity/device-keys.test.ts checks that age-encryption, `age-keygen -y` and `age -d` read what this makes.
 */
function newAgeIdentity(randomBytes: (n: number) => Uint8Array): AgeIdentity {
  const identity = bech32Encode('age-secret-key-', randomBytes(32)).toUpperCase();
  const recipient = ageRecipientOf(identity);
  if (recipient === undefined) throw new Error('age identity: a new identity did not read back');
  return { identity, recipient };
}
