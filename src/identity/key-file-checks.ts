// How the device's key files are read (device-keys.ts): the identity directory and each secret key file checked to be
// the agent's user's alone, with the chown/chmod that fixes them, and a key file read small and never through a link.
// Apart from device-keys.ts, which decides from what these find whether keys are made, read or refused.
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from 'node:fs';
import { agentUid, chownSpec, describeUid } from '../state-dir/safe-path.js';
import { IdentityError, type IdentityCode } from './identity-error.js';
import { DIR_MODE, SECRET_MODE } from './identity-layout.js';

/** A key file is a few lines; anything larger is not one (and is not read whole). */
const MAX_KEY_FILE_BYTES = 4096;

export function refuse(code: IdentityCode, file: string, problem: string, fix: string): IdentityError {
  return new IdentityError(code, `${problem}: ${fix}`, file);
}

/** Node's own "or undefined": ENOENT gives undefined, every other error throws. */
export const lstatOrUndefined = (path: string): Stats | undefined => lstatSync(path, { throwIfNoEntry: false });

const modeText = (st: Stats) => (st.mode & 0o7777).toString(8).padStart(4, '0');

/** The fix for an owner or mode problem: the chown and chmod that apply. */
function ownFix(path: string, st: Stats, mode: number): string {
  const steps = [
    ...(st.uid !== agentUid() ? [`chown ${chownSpec()} ${path}`] : []),
    ...((st.mode & 0o077) !== 0 ? [`chmod ${mode.toString(8)} ${path}`] : []),
  ];
  return steps.join(' && ');
}

/** The directory is the agent's user's alone (0700); false when it is not there. */
export function checkDirectory(dir: string): boolean {
  const st = lstatOrUndefined(dir);
  if (!st) return false;
  if (st.isSymbolicLink())
    throw refuse(
      'KS_IDENTITY_UNSAFE',
      dir,
      `${dir} is a symbolic link, and the device's keys are kept in a real directory`,
      `move the link aside and put the directory it points to in its place`,
    );
  if (!st.isDirectory())
    throw refuse(
      'KS_IDENTITY_MALFORMED',
      dir,
      `${dir} is not a directory`,
      `move it aside: the agent makes the device's keys there`,
    );
  // The usual cause on a device: a command run as an operator beside an agent that runs as root.
  if (st.uid === 0 && agentUid() !== 0)
    throw refuse(
      'KS_IDENTITY_UNSAFE',
      dir,
      `${dir} is root's, and this process runs as ${describeUid(agentUid())}`,
      `use the agent's user to run it (sudo), or give the agent a state directory of its own user`,
    );
  if (st.uid !== agentUid())
    throw refuse(
      'KS_IDENTITY_UNSAFE',
      dir,
      `${dir} is owned by ${describeUid(st.uid)}, not by the agent's user ${describeUid(agentUid())}, so they hold the device's keys`,
      ownFix(dir, st, DIR_MODE),
    );
  if ((st.mode & 0o077) !== 0)
    throw refuse(
      'KS_IDENTITY_UNSAFE',
      dir,
      `${dir} can be read or written by other users (mode ${modeText(st)}), and it holds the device's secret keys`,
      ownFix(dir, st, DIR_MODE),
    );
  return true;
}

/** A secret key file that only the agent's user can read or write (0600); undefined when it is not there. */
export function checkKeyFile(file: string): Stats | undefined {
  const st = lstatOrUndefined(file);
  if (!st) return undefined;
  if (st.isSymbolicLink())
    throw refuse(
      'KS_IDENTITY_UNSAFE',
      file,
      `${file} is a symbolic link, and the agent reads no key through one`,
      `move the link aside and put the key file itself in its place`,
    );
  if (!st.isFile()) throw refuse('KS_IDENTITY_MALFORMED', file, `${file} is not a regular file`, `move it aside`);
  if (st.uid !== agentUid())
    throw refuse(
      'KS_IDENTITY_UNSAFE',
      file,
      `${file} is owned by ${describeUid(st.uid)}, not by the agent's user ${describeUid(agentUid())}`,
      ownFix(file, st, SECRET_MODE),
    );
  // Read by another user is a key that may have been copied: the fix stops it, and says what the copy would mean.
  if ((st.mode & 0o077) !== 0)
    throw refuse(
      'KS_IDENTITY_UNSAFE',
      file,
      `${file} can be read or written by other users (mode ${modeText(st)}): another user could sign this device's reports or read its secrets`,
      `${ownFix(file, st, SECRET_MODE)} (if someone may have copied it, give the device a new identity and enrol it again)`,
    );
  return st;
}

/** At most MAX_KEY_FILE_BYTES of a file, never through a link. */
export function readSmall(file: string): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_KEY_FILE_BYTES)
      throw refuse(
        'KS_IDENTITY_MALFORMED',
        file,
        `${file} is ${size} bytes, more than a key file can be (${MAX_KEY_FILE_BYTES})`,
        `move it aside`,
      );
    const buf = Buffer.alloc(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, buf, at, size - at, at);
      if (n === 0) break;
      at += n;
    }
    return buf.subarray(0, at).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
