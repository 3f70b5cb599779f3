// SPEC §6: unpacking never writes outside the work directory and is bounded in size. Everything lands in a fresh
// staging directory first; only a complete, checked unpack is renamed into place.
import { chmod, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { sniffArchiveFormat, type ArchiveFormat } from './archive-format.js';
import { StagingTree, DIRECTORY_MODE } from './staging-tree.js';
import { resolveUnpackLimits, type UnpackLimits } from './unpack-limits.js';
import { unpackTarInto } from './unpack-tar.js';
import { unpackZipInto } from './unpack-zip.js';

/** What an unpack produced, for reports. */
export interface UnpackResult {
  format: ArchiveFormat;
  /** Entries in the archive (files and directories). */
  entries: number;
  /** Bytes written to files. */
  bytes: number;
}

/**
 * Unpacks a .tar, .tar.gz/.tgz or .zip (recognized by content) so that `destDir` becomes exactly the archive's
 * regular files and directories. Any unsafe entry, exceeded limit or corrupt data fails the whole unpack with an
 * ArtifactError and leaves `destDir` as it was; a staging directory next to it is the only thing ever written.
 */
export async function unpackArchive(archivePath: string, destDir: string, limits: Partial<UnpackLimits> = {}): Promise<UnpackResult> {
  const lim = resolveUnpackLimits(limits);
  const format = await sniffArchiveFormat(archivePath);
  const dest = resolve(destDir);
  // Next to destDir, so the final rename stays on one filesystem; hidden, and named after what it will become.
  await mkdir(dirname(dest), { recursive: true });
  const staging = await mkdtemp(join(dirname(dest), `.${basename(dest)}.unpack-`));
  try {
    const tree = new StagingTree(staging, lim);
    if (format === 'zip') await unpackZipInto(tree, archivePath);
    else await unpackTarInto(tree, archivePath, format === 'tar.gz');
    await chmod(staging, DIRECTORY_MODE);
    await moveIntoPlace(staging, dest);
    return { format, entries: tree.entryCount, bytes: tree.bytesWritten };
  } catch (e) {
    await rm(staging, { recursive: true, force: true });
    throw e;
  }
}

/**
 * Renames `staging` to `dest`. An existing `dest` is renamed away first and removed after, so at every instant
 * `dest` is either the old tree or the new one (there is a moment with neither, never one with a mix).
 */
export async function moveIntoPlace(staging: string, dest: string): Promise<void> {
  try {
    await rename(staging, dest); // succeeds when dest is absent (or an empty directory)
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR' && code !== 'EISDIR') throw e;
  }
  const old = `${staging}.old`; // staging's name is unique (mkdtemp), so this one is too
  await rename(dest, old);
  try {
    await rename(staging, dest);
  } catch (e) {
    await rename(old, dest);
    throw e;
  }
  // The new tree is in place; failing to delete the old one must not report the unpack as failed.
  await rm(old, { recursive: true, force: true }).catch(() => undefined);
}
