// Where secret files live on a device (SPEC §16: "on tmpfs where the device has one"): memory that a power cut or a
// reboot empties, never a disk a stolen device gives up. One directory per state directory, so that two agents on one
// device keep apart. Chosen once, when the agent starts.
import { createHash } from 'node:crypto';
import { accessSync, constants, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { safeDirectory } from './safe-path.js';

export interface SecretsRoot {
  dir: string;
  /** Whether `dir` is on tmpfs. */
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

/**
 * Root with /run on tmpfs: `/run/keystone/<hash>/secrets`. Else a tmpfs /dev/shm: `/dev/shm/keystone-<uid>-<hash>/secrets`,
 * refused when someone else made it, or made it a link. Else `<state-dir>/secrets-run`, on disk. Nothing is created
 * here (a device without secrets gets no directory): ensureSecretsRoot does, at the first secret file.
 */
export function chooseSecretsRoot(stateDir: string, opts: SecretsRootOptions = {}): SecretsRoot {
  const uid = opts.uid ?? process.geteuid?.() ?? 0;
  // Absolute: a process's link in its work directory names the file by this path.
  stateDir = resolve(stateDir);
  const hash = createHash('sha256').update(realOrSame(stateDir)).digest('hex').slice(0, 12);
  const mounts = parseMounts(opts.mounts ?? readMounts());
  const refused: string[] = [];
  const run = opts.run ?? '/run';
  const shm = opts.shm ?? '/dev/shm';
  const candidates = [
    ...(uid === 0 ? [{ dir: join(run, 'keystone', hash, 'secrets'), on: run }] : []),
    { dir: join(shm, `keystone-${uid}-${hash}`, 'secrets'), on: shm },
  ];
  for (const c of candidates) {
    const m = mountOf(mounts, c.on);
    if (m?.fstype !== 'tmpfs' || !m.options.includes('rw') || !writable(c.on)) continue;
    try {
      // What is there already must be safe (checked again when it is used); what is not is made at first use.
      safeDirectory(c.dir);
      return { dir: c.dir, tmpfs: true };
    } catch (e) {
      refused.push((e as Error).message);
    }
  }
  const dir = join(stateDir, 'secrets-run');
  if (mountOf(mounts, realOrSame(stateDir))?.fstype === 'tmpfs') return { dir, tmpfs: true };
  return {
    dir,
    tmpfs: false,
    warning: `no tmpfs for secret files (${refused.length ? refused.join('; ') : `neither ${run} nor ${shm} is a writable tmpfs`}): files of [[lifecycle.run.secrets]] are written under ${dir}, on disk, and removed when their component stops`,
  };
}

/**
 * Creates the root and its parent (`keystone-<uid>-<hash>`, `<hash>`) when missing: 0711 for a root agent, whose run
 * users pass through to their own directory and list nothing; 0700 for an agent that is not root, whose components run
 * as itself. Throws StateDirError (KS_STATE_DIR_UNSAFE) for a link or a directory another user could change.
 */
export function ensureSecretsRoot(dir: string, uid = process.geteuid?.() ?? 0): void {
  const mode = uid === 0 ? 0o711 : 0o700;
  safeDirectory(dirname(dir), { mode });
  safeDirectory(dir, { mode });
}

export interface Mount {
  mountPoint: string;
  fstype: string;
  options: string[];
}

/** The entries of /proc/self/mounts, in order; spaces and other characters in paths are octal escapes there (\040). */
export function parseMounts(text: string): Mount[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 4) continue;
    out.push({ mountPoint: unescape(f[1]!), fstype: f[2]!, options: f[3]!.split(',') });
  }
  return out;
}

/** The mount `path` is on: the longest mount point that contains it (the last one mounted, where several are stacked). */
export function mountOf(mounts: readonly Mount[], path: string): Mount | undefined {
  let best: Mount | undefined;
  for (const m of mounts) {
    const inside = m.mountPoint === '/' || path === m.mountPoint || path.startsWith(`${m.mountPoint}/`);
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

function readMounts(): string {
  try {
    return readFileSync('/proc/self/mounts', 'utf8');
  } catch {
    return '';
  }
}

function realOrSame(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path; // not created yet: the path itself (as the owner tag does)
  }
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
