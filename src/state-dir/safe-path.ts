// Paths the (root) agent creates and opens in its state directory, reached without following a link at any level.
//
// Node has no openat(), so a directory is reached by walking its path from `/` with lstat: every step must be a real
// directory (never a symbolic link) that only root or the agent's user can change. Once that holds for each step, no
// other user can swap an entry on the way between the check and the use, so the path may then be used by name (with
// O_NOFOLLOW on the file at its end). The run users' work directories are theirs by design: nothing is ever reached
// through one of them.
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, type Stats } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { CodedError } from '../core/errors.js';
import { parsePasswd } from './user-db.js';

export type StateDirCode = 'KS_STATE_DIR_UNSAFE' | 'KS_STATE_DIR_LOCKED';

/** The state directory (or a path in it) cannot be trusted, or another agent holds it. */
export class StateDirError extends CodedError<StateDirCode, { path: string; pid?: number }> {
  override readonly name = 'StateDirError';
}

/** Who the agent is: its files must be this user's. Injected by tests only through the process itself. */
function self(): { uid: number; gid: number } {
  return { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0 };
}

/** The agent's user: besides root, the only owner its files may have. */
export const agentUid = (): number => self().uid;

/**
 * Writable by someone other than the owner: by others, or by a group that is not the agent's own (files the agent
 * makes under a umask of 002 are writable by its own group, which is no other user's doing).
 */
export function writableByOthers(st: Stats): boolean {
  return (st.mode & 0o002) !== 0 || ((st.mode & 0o020) !== 0 && st.gid !== self().gid);
}

/** S_ISVTX: in a sticky directory only an entry's owner may rename or remove it. */
const STICKY = 0o1000;

/**
 * Whether a user other than root and the agent's could change what `st` is (a directory: its entries; a file: its
 * bytes): `owner` when another user owns it, `writable` when others (or, `strictGroup`, any group at all) may write
 * it. A sticky directory writable by others (/tmp) is safe: others cannot rename or remove what is not theirs in it,
 * and the next step's owner is checked. `strictGroup` is sshd's rule, for the files the agent trusts and does not
 * make itself; without it, the agent's own group may write (what the agent makes under a umask of 002).
 */
export function changeableByOthers(st: Stats, opts: { strictGroup: boolean }): 'owner' | 'writable' | undefined {
  if (st.uid !== 0 && st.uid !== self().uid) return 'owner';
  const writable = opts.strictGroup ? (st.mode & 0o022) !== 0 : writableByOthers(st);
  if (writable && !(st.isDirectory() && (st.mode & STICKY) !== 0)) return 'writable';
  return undefined;
}

const mode = (st: Stats) => (st.mode & 0o7777).toString(8).padStart(3, '0');

/** `uid 65534 (nobody)`, from /etc/passwd when it names the uid. */
export function describeUid(uid: number): string {
  let name: string | undefined;
  try {
    name = parsePasswd(readFileSync('/etc/passwd', 'utf8')).find((u) => u.uid === uid)?.name;
  } catch {
    /* no passwd: the number says it */
  }
  return name === undefined ? `uid ${uid}` : `uid ${uid} (${name})`;
}

/** The agent's own user as `chown` takes it: `root:` or `alice:`. */
export function chownSpec(): string {
  const uid = self().uid;
  const d = describeUid(uid);
  const name = /\((.*)\)$/.exec(d)?.[1];
  return `${name ?? uid}:`;
}

export function unsafe(path: string, message: string): StateDirError {
  return new StateDirError('KS_STATE_DIR_UNSAFE', message, { path });
}

/** One step of a walk: a directory only root or the agent's user can change (changeableByOthers). */
function checkStep(path: string, st: Stats): void {
  if (st.isSymbolicLink())
    throw unsafe(
      path,
      `${path} is a symbolic link: the agent follows no link on the way to its files (give the real path, or remove the link)`,
    );
  if (!st.isDirectory()) throw unsafe(path, `${path} is not a directory`);
  const who = changeableByOthers(st, { strictGroup: false });
  if (who === 'owner')
    throw unsafe(
      path,
      `${path} is owned by ${describeUid(st.uid)}, who could replace what the agent keeps under it: use a directory only ${describeUid(self().uid)} can change`,
    );
  if (who === 'writable')
    throw unsafe(
      path,
      `${path} is writable by other users (mode ${mode(st)}), who could replace what the agent keeps under it: chmod go-w ${path}`,
    );
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * Walks `path` from `/`, checking every step (see checkStep), and creates what is missing: the directory itself
 * with `create.mode`, missing parents 0755. Without `create`, returns false when the directory does not exist.
 * Throws StateDirError (KS_STATE_DIR_UNSAFE) at the first step that is a link, not a directory, or not safe.
 */
export function safeDirectory(path: string, create?: { mode: number }): boolean {
  const abs = resolve(path);
  const parts = abs.split(sep).filter(Boolean);
  let at: string = sep;
  checkStep(at, lstatSync(at));
  for (const [i, part] of parts.entries()) {
    at = join(at, part);
    let st = lstatOrUndefined(at);
    if (!st) {
      if (!create) return false;
      try {
        mkdirSync(at, { mode: i === parts.length - 1 ? create.mode : 0o755 });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      st = lstatSync(at);
    }
    checkStep(at, st);
  }
  return true;
}

/**
 * A file the agent keeps (state.db, api-token, a log), from lstat or from fstat of a descriptor opened with
 * O_NOFOLLOW: a regular file of the agent's user that no one else can write. `fix` says what to do instead.
 */
export function checkOwnFile(path: string, st: Stats, fix?: string): void {
  // The default fix names the agent's user from /etc/passwd: worked out only for a refusal.
  const how = () =>
    fix ?? `remove it if you did not put it there, else chown ${chownSpec()} ${path} && chmod go-w ${path}`;
  if (st.isSymbolicLink())
    throw unsafe(path, `${path} is a symbolic link: the agent follows no link in its state directory (${how()})`);
  if (!st.isFile()) throw unsafe(path, `${path} is not a regular file (${how()})`);
  const me = self().uid;
  if (st.uid !== me)
    throw unsafe(
      path,
      `${path} is owned by ${describeUid(st.uid)}, not by the agent's user ${describeUid(me)} (${how()})`,
    );
  if (writableByOthers(st)) throw unsafe(path, `${path} is writable by other users (mode ${mode(st)}) (${how()})`);
}

/**
 * The text of a small file the agent keeps (a pid, a record), opened without following a link and read only when it
 * is the agent's own (checkOwnFile); undefined when it is absent, a link, someone else's, or unreadable.
 */
export function readOwnFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    checkOwnFile(path, fstatSync(fd));
    return readFileSync(fd, 'utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** checkOwnFile for a path that may not exist yet: false when it does not. */
export function checkOwnFileIfPresent(path: string, fix?: string): boolean {
  const st = lstatOrUndefined(path);
  if (!st) return false;
  checkOwnFile(path, st, fix);
  return true;
}
