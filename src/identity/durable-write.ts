// Files written whole and durably, from their first byte with their final mode: what a crash, a reader or another
// process may see of them is nothing or all of it.
import { randomUUID } from 'node:crypto';
import { closeSync, constants, fchmodSync, fsyncSync, linkSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Creates `file` with `mode` from its first byte (O_EXCL, never through a link) and makes it durable. */
export function writeNew(file: string, text: string, mode: number): void {
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    // The umask can only have taken bits away; the mode is set, not hoped for.
    fchmodSync(fd, mode);
    const bytes = Buffer.from(text, 'utf8');
    let at = 0;
    while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** `dir/name` made whole beside it and linked into place: a reader never sees half of it, and what is there stays. */
export function linkNew(dir: string, name: string, text: string, mode: number): void {
  const temp = join(dir, `.${name}.${randomUUID()}.tmp`);
  try {
    writeNew(temp, text, mode);
    try {
      linkSync(temp, join(dir, name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    syncDirectory(dir);
  } finally {
    rmSync(temp, { force: true });
  }
}

export function syncDirectory(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
