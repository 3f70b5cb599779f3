// The device's own key pair (SPEC §15), kept in the state directory and never leaving the device:
//
//   <state-dir>/identity/            0700
//     report.key   0600  Ed25519, minisign's secret key format, unencrypted (as `minisign -G -W` writes): signs reports
//     report.pub   0644  its public half, a minisign public key file (what enrolment and `minisign -V -p` take)
//     age.key      0600  an age X25519 identity, as `age-keygen` writes it: decrypts the secrets sent to the device
//   <state-dir>/device.json          the marker: the device had an identity, and its public halves
//
// The keys are made once, at the first start (or by `keystone init` / `keystone identity`), in a directory of their
// own that is renamed into place whole: a crash leaves either no identity or a complete one, and two processes making
// one at once end with one of the two. The report key is unencrypted because the agent starts unattended; the
// directory's and files' modes and owner are what protect it, and are checked at every start.
//
// The marker is what tells "this device never had keys" (a fresh device, or a state directory of an earlier version:
// keys are made) from "its keys are gone" (identity/ wiped or not copied with the rest: refused, since new keys
// would not be the device its certificate names, and the fleet would read its reports as forged).
import { resolve } from 'node:path';
import {
  formatPublicKey,
  parsePublicKey,
  parseSecretKey,
  secretKeyIsEncrypted,
  type SecretKey,
} from '../trust/minisign.js';
import { parseAgeIdentityFile, type AgeIdentity } from './age-identity-file.js';
import { createIdentity } from './create-identity.js';
import { linkNew } from './durable-write.js';
import { IdentityError } from './identity-error.js';
import {
  DEVICE_FILE,
  identityPaths,
  PUBLIC_MODE,
  REPORT_KEY_FILE,
  REPORT_PUB_FILE,
  type IdentityPaths,
} from './identity-layout.js';
import { checkDirectory, checkKeyFile, lstatOrUndefined, readSmall, refuse } from './key-file-checks.js';
import { isoTime } from '../core/iso-time.js';

export {
  AGE_KEY_FILE,
  DEVICE_FILE,
  IDENTITY_DIR,
  identityPaths,
  REPORT_KEY_FILE,
  REPORT_PUB_FILE,
  type IdentityPaths,
} from './identity-layout.js';

export interface DeviceKeys {
  /** The report key, secret half included. Never logged, printed, served or reported. */
  report: SecretKey;
  /** The base64 line of the minisign public key (`RW…`). */
  reportPublic: string;
  /** 16 lowercase hex digits: the key id bytes as stored (`Buffer.from(key.keyId).toString('hex')`). */
  reportKeyId: string;
  /** `AGE-SECRET-KEY-1…`. Never logged, printed, served or reported. */
  ageIdentity: string;
  /** `age1…`. */
  ageRecipient: string;
}

/** What `keystone identity` prints: the public halves only. */
export interface DevicePublicIdentity {
  /** The base64 line of the minisign public key (`RW…`). */
  reportKey: string;
  reportKeyId: string;
  ageRecipient: string;
}

export interface EnsureDeviceKeysOptions {
  /** ms since the epoch: the age file's `# created:` line and the marker's time. */
  now: () => number;
  /** The report key's seed and key id, and the age identity's 32 bytes. */
  randomBytes: (n: number) => Uint8Array;
  /** Make the keys when the device has none yet (the agent's start, init, `keystone identity`); else refuse. */
  create: boolean;
}

/**
 * The device's keys, made when it has none yet and `create` is set. Throws IdentityError: KS_IDENTITY_UNSAFE when the
 * directory or a key file is not the agent's user's alone (the message ends with the chmod/chown that fixes it),
 * KS_IDENTITY_MALFORMED when a file does not parse, KS_IDENTITY_MISSING when one key file is there without the other,
 * when the marker says the device had keys that are gone, or when there are none and `create` is not set.
 */
export async function ensureDeviceKeys(
  stateDir: string,
  o: EnsureDeviceKeysOptions,
): Promise<{ keys: DeviceKeys; created: boolean }> {
  const paths = identityPaths(stateDir);
  const found = await readIdentity(paths);
  if (found.kind === 'keys') {
    // Only what is derived from the keys is repaired: a public half removed by hand, a marker an earlier run did not write.
    if (o.create) {
      if (found.pubMissing) linkNew(paths.dir, REPORT_PUB_FILE, formatPublicKey(found.keys.report), PUBLIC_MODE);
      if (found.marker === undefined) writeMarker(paths, found.keys, o.now());
    }
    return { keys: found.keys, created: false };
  }
  if (found.marker !== undefined) throw gone(paths, found.marker);
  if (!o.create)
    throw refuse(
      'KS_IDENTITY_MISSING',
      paths.dir,
      `the device has no identity yet in ${paths.dir}`,
      'give the agent its first start, or run keystone identity (or keystone init), which make one',
    );
  await createIdentity(paths, o);
  const made = await readIdentity(paths);
  if (made.kind !== 'keys')
    throw refuse(
      'KS_IDENTITY_MISSING',
      paths.dir,
      `${paths.dir} holds no key files after they were made (another process emptied it?)`,
      `move ${paths.dir} aside and start again`,
    );
  writeMarker(paths, made.keys, o.now());
  return { keys: made.keys, created: true };
}

/**
 * The device's public halves for `keystone identity` and doctor, read without writing anything (so it works beside a
 * running agent, and without write access to the state directory); undefined when the device has no identity yet.
 * Refuses what ensureDeviceKeys refuses.
 */
export async function readDevicePublicIdentity(stateDir: string): Promise<DevicePublicIdentity | undefined> {
  const paths = identityPaths(stateDir);
  const found = await readIdentity(paths);
  if (found.kind === 'keys') return publicOf(found.keys);
  if (found.marker !== undefined) throw gone(paths, found.marker);
  return undefined;
}

export const publicOf = (k: DeviceKeys): DevicePublicIdentity => ({
  reportKey: k.reportPublic,
  reportKeyId: k.reportKeyId,
  ageRecipient: k.ageRecipient,
});

type Found =
  | { kind: 'keys'; keys: DeviceKeys; pubMissing: boolean; marker: Marker | undefined }
  /** Neither key file (nor, maybe, the directory). */
  | { kind: 'none'; marker: Marker | undefined };

/** What the marker says; an unreadable one still says that the device had an identity. */
type Marker = Partial<DevicePublicIdentity>;

async function readIdentity(paths: IdentityPaths): Promise<Found> {
  const marker = readMarker(paths.marker);
  if (!checkDirectory(paths.dir)) return { kind: 'none', marker };
  const report = checkKeyFile(paths.reportKey);
  const age = checkKeyFile(paths.ageKey);
  if (!report && !age) return { kind: 'none', marker };
  if (!report || !age) {
    const [missing, present] = report ? [paths.ageKey, paths.reportKey] : [paths.reportKey, paths.ageKey];
    throw refuse(
      'KS_IDENTITY_MISSING',
      missing,
      `${missing} is missing while ${present} is there: the device's identity is half gone`,
      `move ${paths.dir} aside${marker ? ` and ${paths.marker}` : ''} to make a new identity (then enrol the device again: keystonectl enroll --identity …), or put the missing file back from a backup`,
    );
  }
  const reportKey = await parseReportKey(paths.reportKey);
  const ageId = parseAgeKey(paths.ageKey);
  const keys: DeviceKeys = {
    report: reportKey,
    reportPublic: formatPublicKey(reportKey).split('\n')[1]!,
    reportKeyId: Buffer.from(reportKey.keyId).toString('hex'),
    ageIdentity: ageId.identity,
    ageRecipient: ageId.recipient,
  };
  return { kind: 'keys', keys, pubMissing: !checkPublicFile(paths.reportPub, reportKey), marker };
}

/** KS_IDENTITY_MISSING for keys the marker remembers. */
function gone(paths: IdentityPaths, marker: Marker): IdentityError {
  const had = [
    marker.reportKey && `report key ${marker.reportKey}`,
    marker.ageRecipient && `age recipient ${marker.ageRecipient}`,
  ]
    .filter(Boolean)
    .join(', ');
  return refuse(
    'KS_IDENTITY_MISSING',
    paths.dir,
    `the device's identity is gone: ${paths.marker} says this device had one${had ? ` (${had})` : ''}, and ${paths.dir} holds no key files; new keys would not be the device its certificate names`,
    `move ${paths.marker} aside to make a new identity (then enrol the device again: keystonectl enroll --identity …), or put ${paths.dir} back from a backup`,
  );
}

async function parseReportKey(file: string): Promise<SecretKey> {
  const text = readSmall(file);
  const malformed = (why: string) =>
    refuse(
      'KS_IDENTITY_MALFORMED',
      file,
      `${file} is not the device's report key: ${why}`,
      `move ${file} aside and put back the device's own from a backup (or move the whole identity aside to make a new one, then enrol the device again)`,
    );
  let encrypted: boolean;
  try {
    encrypted = secretKeyIsEncrypted(text);
  } catch (e) {
    throw malformed((e as Error).message);
  }
  if (encrypted)
    throw malformed(
      'it is password-protected, and the agent starts unattended (the device key is unencrypted, protected by its mode)',
    );
  try {
    return await parseSecretKey(text);
  } catch (e) {
    // The trust layer's messages name the check that failed, never the key's bytes.
    throw malformed((e as Error).message);
  }
}

function parseAgeKey(file: string): AgeIdentity {
  const parsed = parseAgeIdentityFile(readSmall(file));
  if ('problem' in parsed)
    throw refuse(
      'KS_IDENTITY_MALFORMED',
      file,
      `${file} is not an age identity file: ${parsed.problem}`,
      `move ${file} aside and put back the device's own from a backup (or move the whole identity aside to make a new one, then enrol the device again)`,
    );
  return parsed;
}

/** report.pub, when there, must be report.key's public half; false when it is missing (it is derived: written again). */
function checkPublicFile(file: string, key: SecretKey): boolean {
  const st = lstatOrUndefined(file);
  if (!st) return false;
  const wrong = (why: string) =>
    refuse(
      'KS_IDENTITY_MALFORMED',
      file,
      `${file} ${why}`,
      `remove it: the agent writes it again from ${REPORT_KEY_FILE} at its next start (or keystone identity does)`,
    );
  if (!st.isFile()) throw wrong('is not a regular file');
  let pub;
  try {
    pub = parsePublicKey(readSmall(file));
  } catch (e) {
    if (e instanceof IdentityError) throw e;
    throw wrong(`is not a minisign public key (${(e as Error).message})`);
  }
  const same =
    Buffer.from(pub.keyId).equals(Buffer.from(key.keyId)) &&
    Buffer.from(pub.publicKey).equals(Buffer.from(key.publicKey));
  if (!same) throw wrong(`is not the public half of ${REPORT_KEY_FILE}`);
  return true;
}

function readMarker(file: string): Marker | undefined {
  const st = lstatOrUndefined(file);
  if (!st) return undefined;
  try {
    const parsed = JSON.parse(readSmall(file)) as { identity?: Marker };
    const id = parsed.identity ?? {};
    return {
      ...(typeof id.reportKey === 'string' && { reportKey: id.reportKey }),
      ...(typeof id.ageRecipient === 'string' && { ageRecipient: id.ageRecipient }),
    };
  } catch {
    return {};
  }
}

/** The marker, written once (linked into place, so an existing one is never replaced). */
function writeMarker(paths: IdentityPaths, keys: DeviceKeys, nowMs: number): void {
  const text = JSON.stringify({ identity: { ...publicOf(keys), created: isoTime(nowMs) } }, null, 2) + '\n';
  linkNew(resolve(paths.marker, '..'), DEVICE_FILE, text, PUBLIC_MODE);
}
