// Moves a staged tree into a live directory as root, although the live directory belongs to the component's
// run user, who may be changing it at that very moment: a directory checked by path and then used by path can
// be swapped for a link in between (rename it away, put a symlink to /etc in its place), and root's rename or
// rm would then follow the link. So nothing below the live root is ever reached by a path: each directory is
// opened once, without following a link (O_DIRECTORY|O_NOFOLLOW), and every rename, unlink, rmdir and open in
// it goes through that descriptor, as /proc/self/fd/N/NAME. The kernel resolves /proc/self/fd/N to the
// directory the descriptor holds, not to whatever path it had, so a swap after the open changes nothing: the
// agent only ever acts on a name inside a directory it opened as a real directory. (Node has no renameat or
// openat; the /proc path is the same system call on the same directory.) Were the run user to move a checked
// directory elsewhere, it can only move it where it can write itself, so the files follow it there and gain it
// nothing. Doing the moves as the run user (a setpriv child) would be as safe, but is a process per install and
// needs the private staging tree opened to that user.
import { constants } from 'node:fs';
import { mkdir, open, readdir, rename, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactError } from './artifact-error.js';

/** A test seam, a no-op in production: lets a test act where a racing process could, between a check and its use. */
export interface MergeTreeSeam {
  /** Called with an entry's path relative to `dest` after it was examined and before the agent acts on it. */
  afterCheck?: (rel: string) => void | Promise<void>;
}

/**
 * Moves every entry of `src` (our own files and directories, in a directory nobody else can reach) into `dest`,
 * replacing what is there: a file replaces a file or link atomically (rename); a directory merges into a real
 * directory and replaces anything else. Links in `dest` are replaced, never traversed, even when planted while
 * the merge runs. `src` is consumed. `dest` itself must not be a link, and its parents must be the agent's.
 */
export async function mergeTree(src: string, dest: string, seam: MergeTreeSeam = {}): Promise<void> {
  await mkdir(dest, { recursive: true, mode: 0o755 });
  const root = await openDirectoryIfThere(dest);
  if (!root) throw unsafe(dest, 'it is not a directory (a link or a file in its place)');
  try {
    await assertProcFd(root, dest);
    await mergeInto(src, root, '', seam);
  } finally {
    await root.close();
  }
}

async function mergeInto(src: string, dir: FileHandle, base: string, seam: MergeTreeSeam): Promise<void> {
  // `src` is the agent's own (a directory nobody else can reach), so it is read by path.
  for (const entry of await readdir(src, { withFileTypes: true })) {
    const name = entry.name;
    const from = join(src, name);
    const to = at(dir, name);
    const rel = base ? `${base}/${name}` : name;
    if (entry.isDirectory()) {
      const sub = await openDirectoryIfThere(to);
      if (sub) {
        try {
          await seam.afterCheck?.(rel);
          await mergeInto(from, sub, rel, seam);
        } finally {
          await sub.close();
        }
        continue;
      }
      // Not a real directory (nothing, a file or a link): whatever it is goes, then ours takes its place.
      await seam.afterCheck?.(rel);
      await removeEntry(dir, name, rel, seam);
      await rename(from, to);
      continue;
    }
    await seam.afterCheck?.(rel);
    // rename() replaces a file or a link (the link itself, not its target) atomically, but not a directory.
    try {
      await rename(from, to);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EISDIR' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
      await removeEntry(dir, name, rel, seam);
      await rename(from, to);
    }
  }
}

/**
 * How deep a directory of the work directory the agent removes may be. The removal holds one descriptor per
 * level, and the run user decides the depth: without a bound, a deep enough chain would use up the agent's
 * descriptors for everything else it does meanwhile.
 */
export const MAX_REMOVE_DEPTH = 128;

/**
 * Removes `name` from `dir`, whatever it is, without following links at any level: a directory is opened
 * (no-follow) and emptied through its descriptor. (fs.rm's recursive walk goes by path, and a subdirectory
 * swapped for a link during the walk makes it delete the link's target's entries.) Absent is fine.
 */
async function removeEntry(dir: FileHandle, name: string, rel: string, seam: MergeTreeSeam, depth = 1): Promise<void> {
  const path = at(dir, name);
  try {
    await unlink(path); // a file or a link: only the name goes
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code !== 'EISDIR' && code !== 'EPERM') throw e;
  }
  if (depth > MAX_REMOVE_DEPTH)
    throw new ArtifactError('KS_ARTIFACT_INSTALL_UNSAFE', `cannot replace ${rel} in the work directory: it is more than ${MAX_REMOVE_DEPTH} directories deep`, {
      limit: MAX_REMOVE_DEPTH,
    });
  const sub = await openDirectoryIfThere(path);
  if (sub) {
    try {
      await seam.afterCheck?.(rel);
      for (const child of await readdir(at(sub))) await removeEntry(sub, child, `${rel}/${child}`, seam, depth + 1);
    } finally {
      await sub.close();
    }
  }
  try {
    await rmdir(path);
  } catch (e) {
    // Gone already, or no longer a directory (swapped meanwhile): unlink what is there now.
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') await unlink(path).catch(ignoreAbsent);
    else if (code !== 'ENOENT') throw e;
  }
}

/** `name` inside the directory `dir` holds, as a path the kernel resolves through the descriptor. */
function at(dir: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${dir.fd}` : `/proc/self/fd/${dir.fd}/${name}`;
}

const DIRECTORY_NOFOLLOW = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

async function openDirectory(path: string): Promise<FileHandle> {
  return open(path, DIRECTORY_NOFOLLOW);
}

/** The real directory at `path`, or undefined when nothing or something else (a file, a link) is there. */
async function openDirectoryIfThere(path: string): Promise<FileHandle | undefined> {
  try {
    return await openDirectory(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return undefined;
    throw e;
  }
}

/**
 * Fails closed where /proc/self/fd does not lead to the agent's own descriptors (no /proc in a bare chroot):
 * every path below would then name something else, or nothing.
 */
async function assertProcFd(dir: FileHandle, dest: string): Promise<void> {
  const [held, viaProc] = await Promise.all([dir.stat(), stat(at(dir)).catch(() => undefined)]);
  if (viaProc === undefined || viaProc.dev !== held.dev || viaProc.ino !== held.ino)
    throw unsafe(dest, '/proc/self/fd does not lead to the agent\'s own descriptors (is /proc mounted?)');
}

function unsafe(dest: string, why: string): ArtifactError {
  return new ArtifactError('KS_ARTIFACT_INSTALL_UNSAFE', `cannot install artifacts into ${dest}: ${why}`, { path: dest });
}

function ignoreAbsent(e: unknown): void {
  if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
}
