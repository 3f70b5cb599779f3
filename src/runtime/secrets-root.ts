// Where secret files live on a device (SPEC §16: "on tmpfs where the device has one"): memory that a power cut or a
// reboot empties, never a disk a stolen device gives up.
//
// The directory has a name no one can guess or take first: made by mkdtemp on the tmpfs (`/run/keystone-XXXXXX` for a
// root agent where /run is tmpfs, else `/dev/shm/keystone-<uid>-XXXXXX`), at the first secret file, and recorded in
// the state directory (`secrets-root`, 0600) so that a restarted agent finds it again: the files of the instances it
// adopts are there. A recorded directory is taken up again only while it is still a directory of the agent's user with
// the mode the agent gives it; else a new one is made, and the old one swept of what no running instance uses (then
// removed) where only root or the agent's user could have changed it. On disk (`<state-dir>/secrets-run`) only when
// the device has no tmpfs at all, and then the agent says so.
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  fsyncSync,
  lstatSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmdirSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { SECRETS_ON_DISK, SECRETS_ROOT_RECORD } from '../state-dir/layout.js';
import { changeableByOthers, readOwnFile, safeDirectory } from '../state-dir/safe-path.js';
import { mountOf, parseMounts, readMounts, realOrSame, type Mount } from './mount-table.js';

/**
 * The directory secret files go in, for the runtimes (secret-files.ts); one object shared by the process and the
 * container runtime, so that both write under the same directory.
 */
export interface SecretsDir {
  /** The directory, made (or the recorded one taken up) at the first call. Throws StateDirError (KS_STATE_DIR_UNSAFE). */
  dir(): string;
  /** The directory when it exists already (nothing is made): where files of earlier starts are looked for. */
  known(): string | undefined;
  /** Directories of earlier agents that may still hold files of running instances: swept, and removed once empty. */
  former(): readonly string[];
}

export interface SecretsRoot extends SecretsDir {
  /** Where a new directory is made: under a tmpfs mount (`/run`, `/dev/shm`), or the state directory's `secrets-run`. */
  base: string;
  /** Whether the files are on tmpfs. */
  tmpfs: boolean;
  /** For the agent's log, once: why the secret files are not on tmpfs (undefined when they are). */
  warning?: string;
}

export interface SecretsRootOptions {
  /** The agent's uid; default the process's. */
  uid?: number;
  /** The text of /proc/self/mounts; default read from there (tests give their own). */
  mounts?: string;
  /** Where /run and /dev/shm are; default the real ones (tests give temporary directories). */
  run?: string;
  shm?: string;
}

/** The record of the directory in the state directory, and the directory on disk when the device has no tmpfs (state-dir/layout.ts). */
export { SECRETS_ON_DISK, SECRETS_ROOT_RECORD };

/** 0711 for a root agent, whose run users pass through to their own file and list nothing; 0700 otherwise. */
export const secretsRootMode = (uid: number): number => (uid === 0 ? 0o711 : 0o700);

interface Record_ {
  dir: string;
  former?: string[];
}

/**
 * Chooses where the directory is made: as root with /run a writable tmpfs, `/run/keystone-XXXXXX`; else with
 * /dev/shm one, `/dev/shm/keystone-<uid>-XXXXXX`; else `<state-dir>/secrets-run` (on tmpfs only when the state
 * directory is), with a warning naming why. Nothing is made here: a device without secret files gets no directory.
 */
export function chooseSecretsRoot(stateDir: string, opts: SecretsRootOptions = {}): SecretsRoot {
  const uid = opts.uid ?? process.geteuid?.() ?? 0;
  // Absolute: a process's link in its work directory names the file by this path.
  stateDir = resolve(stateDir);
  const mounts = parseMounts(opts.mounts ?? readMounts());
  const run = opts.run ?? '/run';
  const shm = opts.shm ?? '/dev/shm';
  const why: string[] = [];
  const candidates = [
    ...(uid === 0 ? [{ on: run, prefix: 'keystone-' }] : []),
    { on: shm, prefix: `keystone-${uid}-` },
  ];
  if (uid !== 0) why.push(`${run} is for a root agent only`);
  for (const c of candidates) {
    const m = mountOf(mounts, realOrSame(c.on));
    if (m?.fstype !== 'tmpfs') why.push(`${c.on} is not a tmpfs`);
    else if (!m.options.includes('rw')) why.push(`${c.on} is mounted read-only`);
    else if (!writable(c.on)) why.push(`${c.on} is not writable by the agent's user`);
    else return new RecordedSecretsRoot(stateDir, uid, mounts, { base: c.on, prefix: c.prefix, tmpfs: true });
  }
  const onDisk = join(stateDir, SECRETS_ON_DISK);
  if (mountOf(mounts, realOrSame(stateDir))?.fstype === 'tmpfs')
    return new RecordedSecretsRoot(stateDir, uid, mounts, { base: onDisk, tmpfs: true });
  return new RecordedSecretsRoot(stateDir, uid, mounts, {
    base: onDisk,
    tmpfs: false,
    warning: `no tmpfs for secret files (${why.join('; ')}): files of [[lifecycle.run.secrets]] are written under ${onDisk}, on disk, and removed when their component stops`,
  });
}

/** The path of the directory an agent recorded in `stateDir` (undefined when it made none): for tests and tools. */
export function recordedSecretsRoot(stateDir: string): string | undefined {
  return readRecord(join(resolve(stateDir), SECRETS_ROOT_RECORD))?.dir;
}

/** The directory an agent makes once (or takes up from its record) and records in its state directory. */
class RecordedSecretsRoot implements SecretsRoot {
  readonly base: string;
  readonly tmpfs: boolean;
  readonly warning?: string;
  private readonly prefix: string | undefined;
  private readonly record: string;
  private readonly mode: number;
  /** The directory in use, once made or taken up. */
  private current: string | undefined;
  /** The record as read at the first need (undefined: not read yet; null: none). */
  private recorded: Record_ | null | undefined;
  private formerDirs: string[] | undefined;

  constructor(
    private readonly stateDir: string,
    private readonly uid: number,
    private readonly mounts: readonly Mount[],
    o: { base: string; prefix?: string; tmpfs: boolean; warning?: string },
  ) {
    this.base = o.base;
    this.prefix = o.prefix;
    this.tmpfs = o.tmpfs;
    if (o.warning !== undefined) this.warning = o.warning;
    this.record = join(stateDir, SECRETS_ROOT_RECORD);
    this.mode = secretsRootMode(uid);
  }

  dir(): string {
    const known = this.known();
    if (known !== undefined) return known;
    // The one recorded (or used until now) is gone or not as the agent left it: a new one, the old one swept.
    const before = this.current ?? this.readOnce()?.dir;
    const made = this.make();
    const former = [
      ...new Set([
        ...this.former(),
        ...(before !== undefined && before !== made && this.sweepable(before) ? [before] : []),
      ]),
    ];
    try {
      writeRecord(this.record, { dir: made, ...(former.length && { former }) });
    } catch (e) {
      if (made !== join(this.stateDir, SECRETS_ON_DISK)) rmdirSync(made);
      throw e;
    }
    this.recorded = { dir: made, former };
    this.formerDirs = former;
    this.current = made;
    return made;
  }

  known(): string | undefined {
    const candidate = this.current ?? this.readOnce()?.dir;
    if (candidate === undefined || !this.usable(candidate)) return undefined;
    return (this.current = candidate);
  }

  former(): readonly string[] {
    if (this.formerDirs === undefined) {
      const rec = this.readOnce();
      const listed = [...(rec?.former ?? []), ...(rec && !this.usable(rec.dir) ? [rec.dir] : [])];
      this.formerDirs = [...new Set(listed)].filter((d) => d !== this.current && this.sweepable(d));
    }
    return this.formerDirs;
  }

  private readOnce(): Record_ | null {
    if (this.recorded === undefined) this.recorded = readRecord(this.record) ?? null;
    return this.recorded;
  }

  /** A new directory: mkdtemp on the tmpfs (a name no one could take first), or the state directory's own. */
  private make(): string {
    if (this.prefix === undefined) {
      safeDirectory(this.base, { mode: this.mode });
      chmodSync(this.base, this.mode);
      return this.base;
    }
    safeDirectory(this.base);
    const dir = mkdtempSync(join(this.base, this.prefix));
    chmodSync(dir, this.mode);
    return dir;
  }

  /**
   * Whether `dir` may hold secret files still: a real directory of the agent's user with exactly the agent's mode, on
   * a path no other user can change, where this agent makes them (a tmpfs, or the state directory's own on disk).
   */
  private usable(dir: string): boolean {
    const st = this.ours(dir);
    if (!st || st.uid !== this.uid || (st.mode & 0o7777) !== this.mode) return false;
    if (this.tmpfs) return mountOf(this.mounts, realOrSame(dir))?.fstype === 'tmpfs';
    return dir === this.base;
  }

  /** Whether an earlier directory can be swept: the agent user's own, that no other user could have changed. */
  private sweepable(dir: string): boolean {
    const st = this.ours(dir);
    return st !== undefined && st.uid === this.uid && changeableByOthers(st, { strictGroup: true }) === undefined;
  }

  /**
   * `dir`'s lstat when it bears a name this agent gives and is a real directory reached without a link or a step
   * another user could change; else undefined.
   */
  private ours(dir: string): Stats | undefined {
    if (!(
      dir === join(this.stateDir, SECRETS_ON_DISK) ||
      (basename(dir).startsWith('keystone-') && dir === resolve(dir))
    ))
      return undefined;
    try {
      return safeDirectory(dir) ? lstatSync(dir) : undefined;
    } catch {
      return undefined;
    }
  }
}

/** The record, or undefined when there is none or it is not the agent's own well-formed file. */
function readRecord(path: string): Record_ | undefined {
  const text = readOwnFile(path);
  if (text === undefined) return undefined;
  try {
    const r = JSON.parse(text) as Partial<Record_>;
    if (typeof r.dir !== 'string' || !r.dir.startsWith('/')) return undefined;
    const former = Array.isArray(r.former)
      ? r.former.filter((d): d is string => typeof d === 'string' && d.startsWith('/'))
      : [];
    return { dir: r.dir, former };
  } catch {
    return undefined;
  }
}

/** Replaces the record in one step: a fresh file (never through a link), renamed over it. */
function writeRecord(path: string, record: Record_): void {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, JSON.stringify(record) + '\n');
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, path);
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      /* closed already */
    }
    try {
      unlinkSync(tmp);
    } catch {
      /* not there */
    }
    throw e;
  }
}

/**
 * A directory given as such (tests, tools): made when missing, with the agent's mode (secretsRootMode), and checked
 * at each use. Throws StateDirError (KS_STATE_DIR_UNSAFE) for a link or a directory another user could change.
 */
export function fixedSecretsDir(path: string, uid = process.geteuid?.() ?? 0): SecretsDir {
  const dir = resolve(path);
  return {
    dir: () => {
      safeDirectory(dir, { mode: secretsRootMode(uid) });
      return dir;
    },
    known: () => dir,
    former: () => [],
  };
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
