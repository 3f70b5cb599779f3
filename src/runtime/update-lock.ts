// Update locks (SPEC §19, as balena's): a component holds an advisory lock (flock) on a file in its work directory
// while it must not be stopped for a new revision. The agent takes the same lock itself while it stops the
// component, so that the component cannot grab it mid-stop. Node has no flock(2): the agent opens the file itself and
// util-linux's `flock` locks that open file (its descriptor handed to it), so the lock belongs to the agent's
// descriptor and goes when the agent closes it, or dies.
import { CodedError } from '../core/errors.js';
import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, openSync } from 'node:fs';

/** `flock -E`: the exit code that means "held by another" (with -n), told apart from flock's own failures (1). */
const CONFLICT = 75;

export interface HeldUpdateLock {
  readonly file: string;
  /** Lets go of the lock (closes the agent's descriptor); a second call does nothing. */
  release(): Promise<void>;
  /** False once released. */
  readonly held: boolean;
}

export class UpdateLockError extends CodedError<'KS_UPDATE_LOCK', object> {
  constructor(message: string) {
    super('KS_UPDATE_LOCK', message);
  }
}

/**
 * The lock now; undefined when another process holds it. A lock file that does not exist is held by nobody: there is
 * nothing to take (the agent creates nothing in a component's work directory).
 */
export async function tryUpdateLock(workDir: string, lock: string): Promise<HeldUpdateLock | 'held' | undefined> {
  const fd = openLockFile(workDir, lock);
  if (fd === undefined) return undefined;
  let got: boolean;
  try {
    got = await flockFd(fd, { wait: false });
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  if (got) return held(fd, `${workDir}/${lock}`);
  closeSync(fd);
  return 'held';
}

/** The lock as soon as it is free (the moment its holder lets go, not at a poll); rejects when `signal` aborts. */
export async function waitUpdateLock(
  workDir: string,
  lock: string,
  signal?: AbortSignal,
): Promise<HeldUpdateLock | undefined> {
  const fd = openLockFile(workDir, lock);
  if (fd === undefined) return undefined;
  try {
    await flockFd(fd, { wait: true, ...(signal && { signal }) });
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return held(fd, `${workDir}/${lock}`);
}

/**
 * A lock on a file of the agent's own (a directory only the agent's user writes), created if missing: the agent
 * update's switch lock, shared with agent-rollback's `flock`. Waits for it; rejects when `signal` aborts.
 */
export async function waitOwnLock(file: string, signal?: AbortSignal): Promise<HeldUpdateLock> {
  const fd = openSync(file, constants.O_RDONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    await flockFd(fd, { wait: true, ...(signal && { signal }) });
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return held(fd, file);
}

function held(fd: number, file: string): HeldUpdateLock {
  let open = true;
  return {
    file,
    get held() {
      return open;
    },
    release: async () => {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/** O_PATH (Linux; not in Node's constants): a descriptor that names a file without opening it. */
const O_PATH = 0o10000000;

/**
 * Opens `lock` under `workDir` (which the agent trusts) one part at a time through /proc/self/fd, never following a
 * link and never opening anything but directories on the way and a regular file at the end: the component's user
 * owns the work directory (a container may even make device nodes in its lock's directory) and could otherwise point
 * the agent (root) at a device, whose mere opening can act (a watchdog, a tape), or at a FIFO. The last part is named
 * with O_PATH first and opened only once fstat says it is a regular file. Undefined when absent.
 */
function openLockFile(workDir: string, lock: string): number | undefined {
  const parts = lock.split('/');
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY, O_NOCTTY } = constants;
  let dir: number;
  try {
    dir = openSync(workDir, O_RDONLY | O_DIRECTORY);
  } catch (e) {
    if (isAbsent(e)) return undefined;
    throw new UpdateLockError(`${workDir}: ${(e as Error).message}`);
  }
  try {
    for (let i = 0; i < parts.length; i++) {
      const last = i === parts.length - 1;
      const part = parts[i]!;
      if (part === '' || part === '.' || part === '..')
        throw new UpdateLockError(`${lock}: not a path inside the work directory`);
      let next: number;
      try {
        next = openSync(
          `/proc/self/fd/${dir}/${part}`,
          last ? O_PATH | O_NOFOLLOW : O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_DIRECTORY,
        );
      } catch (e) {
        if (isAbsent(e)) return undefined;
        const why =
          (e as NodeJS.ErrnoException).code === 'ELOOP'
            ? 'is a symbolic link'
            : (e as NodeJS.ErrnoException).code === 'ENOTDIR'
              ? 'is not a directory'
              : (e as Error).message;
        throw new UpdateLockError(
          `${workDir}/${parts.slice(0, i + 1).join('/')} ${why}: an update lock is a regular file in the work directory`,
        );
      }
      closeSync(dir);
      dir = next;
    }
    const st = fstatSync(dir);
    if (st.isSymbolicLink())
      throw new UpdateLockError(
        `${workDir}/${lock} is a symbolic link: an update lock is a regular file in the work directory`,
      );
    if (!st.isFile())
      throw new UpdateLockError(
        `${workDir}/${lock} is not a regular file (a device, a FIFO, a socket or a directory): an update lock is one`,
      );
    // The same inode, now opened for real (the O_PATH descriptor holds it: no name to swap in between).
    return openSync(`/proc/self/fd/${dir}`, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  } finally {
    if (dir >= 0) closeSync(dir);
  }
}

function isAbsent(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === 'ENOENT';
}

/** Locks the open file `fd` with flock(1) in a child given it as its descriptor 3; false when held by another (-n). */
function flockFd(fd: number, o: { wait: boolean; signal?: AbortSignal }): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (o.signal?.aborted) return reject(new UpdateLockError('stopped waiting for the lock'));
    const child = spawn('flock', ['-x', ...(o.wait ? [] : ['-n']), '-E', String(CONFLICT), '3'], {
      stdio: ['ignore', 'ignore', 'pipe', fd],
    });
    let stderr = '';
    const onAbort = () => child.kill('SIGTERM');
    o.signal?.addEventListener('abort', onAbort, { once: true });
    child.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(0, 2000)));
    child.once('error', (e) => reject(new UpdateLockError(`cannot run flock (util-linux): ${e.message}`)));
    child.once('close', (code) => {
      o.signal?.removeEventListener('abort', onAbort);
      if (code === 0) resolve(true);
      else if (code === CONFLICT && !o.wait) resolve(false);
      else if (o.signal?.aborted) reject(new UpdateLockError('stopped waiting for the lock'));
      else reject(new UpdateLockError(`flock exited ${code}: ${stderr.trim()}`));
    });
  });
}
