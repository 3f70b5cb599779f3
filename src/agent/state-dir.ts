// The state directory is the agent's alone: checked whole before the agent trusts anything in it (SPEC §5).
import { lstatSync, mkdirSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { chownSpec, describeUid, safeDirectory, unsafe, writableByOthers } from '../state-dir/safe-path.js';
import { COMPONENTS_DIR, REPOSITORY_CONTENT, SECRETS_ON_DISK, WORK_DIR } from '../state-dir/layout.js';
import { makePrivate } from '../state-dir/private-fs.js';
import { lockStateDir, type StateDirLock } from './state-dir-lock.js';

/**
 * What under the state directory holds repository content: the followed repository's cache (every plan's
 * configuration values, other components' too) and the reports' notes cache. The agent's user's alone.
 */
export { REPOSITORY_CONTENT };

/**
 * `components/<name>/work` belongs to the component's run user, and so may what a crashed install left next to it; so
 * does a process's secret file in `secrets-run/<start>/` (secret files are there only on a device without tmpfs).
 */
function isRunUsersTree(rel: string[]): boolean {
  if (rel.length === 3 && rel[0] === SECRETS_ON_DISK) return true;
  // `components/NAME/work`, and for units of a group `components/app/web/work`, `components/w/5/work`… ('work' is
  // a reserved member name, so no group directory is called that).
  const last = rel[rel.length - 1]!;
  return rel.length >= 3 && rel[0] === COMPONENTS_DIR && (last === WORK_DIR || last.startsWith(`.${WORK_DIR}.`));
}

/**
 * Creates the state directory (0711) if it is missing, then refuses (KS_STATE_DIR_UNSAFE) a state directory that
 * another user could have written to: itself, or anything in it but the run users' work directories, owned by
 * another user, writable by others, or a symbolic link; and a path to it through a link or a directory another
 * user can change. The first problem is reported with its fix, and how many more there are.
 */
export function checkStateDir(stateDir: string): void {
  checkStateDirItself(resolve(stateDir));
  checkStateDirContents(resolve(stateDir));
}

/** The directory itself and the way to it (created 0711 if missing). */
function checkStateDirItself(stateDir: string): void {
  safeDirectory(dirname(stateDir), { mode: 0o755 });
  try {
    mkdirSync(stateDir, { mode: 0o711 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const me = process.geteuid?.() ?? 0;
  const st = lstatSync(stateDir);
  if (st.isSymbolicLink())
    throw unsafe(
      stateDir,
      `state directory ${stateDir} is a symbolic link: give --state-dir its real path${realPath(stateDir)}`,
    );
  if (!st.isDirectory()) throw unsafe(stateDir, `state directory ${stateDir} is not a directory`);
  const fixDir = `chown ${chownSpec()} ${stateDir} && chmod 711 ${stateDir}`;
  // A sticky directory is not enough here: another user could still add the files the agent looks for (api-token).
  if (st.uid !== me)
    throw unsafe(
      stateDir,
      `state directory ${stateDir} is owned by ${describeUid(st.uid)}, not by the agent's user ${describeUid(me)}: ${fixDir}, and remove anything in it you did not put there`,
    );
  if (writableByOthers(st))
    throw unsafe(
      stateDir,
      `state directory ${stateDir} is writable by other users (mode ${(st.mode & 0o7777).toString(8)}): ${fixDir}, and remove anything in it you did not put there`,
    );
}

/** Everything in it but the run users' trees. */
function checkStateDirContents(stateDir: string): void {
  const me = process.geteuid?.() ?? 0;
  const owner = chownSpec();
  const fix = (path: string) =>
    `remove it if you did not put it there, else chown ${owner} ${path} && chmod go-w ${path}`;
  const problems: Array<{ path: string; message: string }> = [];
  const pending: string[][] = [[]];
  while (pending.length) {
    const rel = pending.pop()!;
    const dir = join(stateDir, ...rel);
    for (const name of readdirSync(dir).sort()) {
      const entry = [...rel, name];
      if (isRunUsersTree(entry)) continue;
      const path = join(stateDir, ...entry);
      const e = lstatIfPresent(path);
      if (!e) continue; // removed meanwhile (a rotated log, a finished download)
      if (e.isSymbolicLink())
        problems.push({
          path,
          message: `${path} is a symbolic link, and the agent follows none in its state directory: remove it`,
        });
      else if (e.uid !== me)
        problems.push({
          path,
          message: `${path} is owned by ${describeUid(e.uid)}, not by the agent's user ${describeUid(me)}: ${fix(path)}`,
        });
      else if (writableByOthers(e))
        problems.push({
          path,
          message: `${path} is writable by other users (mode ${(e.mode & 0o7777).toString(8)}): ${fix(path)}`,
        });
      else if (e.isDirectory()) pending.push(entry);
    }
  }
  const first = problems[0];
  if (first) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more under ${stateDir}${sep})` : '';
    throw unsafe(first.path, `state directory ${stateDir}: ${first.message}${more}`);
  }
}

/**
 * What an agent does first, before it reads or adopts anything: checks the state directory and takes its lock
 * (lockStateDir). The directory itself is checked before the lock file is opened in it, its contents after the
 * lock is held, so that another agent's files do not change while they are checked.
 */
export function openStateDir(dir: string): StateDirLock {
  const stateDir = resolve(dir);
  checkStateDirItself(stateDir);
  const lock = lockStateDir(stateDir);
  try {
    checkStateDirContents(stateDir);
    keepRepositoryContentPrivate(stateDir);
  } catch (e) {
    lock.release();
    throw e;
  }
  return lock;
}

/**
 * Repository content readable by others (SPEC §10: a component's run user must not read other components' values
 * there, nor its own round the API's token): its directories are made 0700 before anything is fetched into them,
 * and what an earlier version left 0755/0644 is tightened (directories 0700, files 0600: group and other bits off).
 */
function keepRepositoryContentPrivate(stateDir: string): void {
  for (const name of REPOSITORY_CONTENT) {
    const dir = join(stateDir, name);
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    makePrivate(dir);
  }
}

/** lstat, or undefined when nothing is there (doctor reads the state directory the same way). */
export function lstatIfPresent(path: string) {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

function realPath(path: string): string {
  try {
    return ` (${realpathSync(path)})`;
  } catch {
    return '';
  }
}
