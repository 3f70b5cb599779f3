// The file operations behind secret files (secret-files.ts), each made so that no link is ever followed: a file is
// written under a fresh name (O_CREAT|O_EXCL|O_NOFOLLOW) and renamed into place (rename replaces a link, never writes
// through it), and a link in a work directory is replaced or removed as a link (rename, unlink), never opened.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, lstat, open, readlink, rename, rm, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import { RuntimeError } from './runtime-error.js';

export interface Owner {
  uid: number;
  gid: number;
}

const token = () => randomBytes(6).toString('hex');
const errno = (e: unknown) => (e as NodeJS.ErrnoException).code;

/**
 * Writes `bytes` as `dir/name` with exactly `mode` (and `owner`, set on the descriptor before a byte is written): a
 * temporary file that cannot exist beforehand, then renamed over whatever stands at `name` (a planted link included:
 * the link is replaced, its target left alone).
 */
export async function writeSecretFile(
  dir: string,
  name: string,
  bytes: Uint8Array,
  opts: { mode: number; owner?: Owner },
): Promise<string> {
  const path = join(dir, name);
  for (;;) {
    const tmp = join(dir, `.${name}.${token()}.tmp`);
    let fh;
    try {
      fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (e) {
      if (errno(e) === 'EEXIST') continue; // a name taken (planted): another one
      throw e;
    }
    try {
      if (opts.owner) await fh.chown(opts.owner.uid, opts.owner.gid);
      await fh.chmod(opts.mode);
      await fh.writeFile(bytes);
      await fh.close();
      await rename(tmp, path);
      return path;
    } catch (e) {
      await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw e;
    }
  }
}

/**
 * Refuses (KS_SECRET_PATH_TAKEN) when `link` is something other than a symbolic link: a file or directory of that
 * name in the work directory is the run user's own, which the agent neither reads nor replaces.
 */
export async function assertLinkFree(c: DesiredComponent, link: string, secret: string): Promise<void> {
  let st;
  try {
    st = await lstat(link);
  } catch (e) {
    if (errno(e) === 'ENOENT') return;
    throw e;
  }
  if (!st.isSymbolicLink())
    throw new RuntimeError(
      'KS_SECRET_PATH_TAKEN',
      `${c.name} reads secret ${secret} as ${link}, where something other than a link already stands (the component's own file): the agent does not replace it; remove it, or give the secret another path`,
      { component: c.name, secret, path: link },
    );
}

/** `link` → `target`, replacing a link of that name in one step (a new link under a fresh name, renamed over it). */
export async function placeLink(c: DesiredComponent, link: string, target: string, secret: string): Promise<void> {
  await assertLinkFree(c, link, secret);
  for (;;) {
    const tmp = `${link}.ks-${token()}`;
    try {
      await symlink(target, tmp);
    } catch (e) {
      if (errno(e) === 'EEXIST') continue;
      throw e;
    }
    try {
      await rename(tmp, link);
      return;
    } catch (e) {
      await unlink(tmp).catch(() => {});
      throw e;
    }
  }
}

/** Removes `link` when it is still the link to `target` that the agent made (a newer instance's link stays). */
export async function removeLink(link: string, target: string): Promise<void> {
  try {
    const st = await lstat(link);
    if (!st.isSymbolicLink() || (await readlink(link)) !== target) return;
    await unlink(link);
  } catch (e) {
    if (errno(e) !== 'ENOENT') throw e;
  }
}

/**
 * Removes a directory of secret files: made writable first (a read-only directory of the agent's own user cannot be
 * emptied otherwise), then removed without following any link in it. Gone already is fine.
 */
export async function removeSecretDir(dir: string): Promise<void> {
  try {
    const st = await lstat(dir);
    if (st.isDirectory()) await chmod(dir, 0o700);
  } catch (e) {
    if (errno(e) === 'ENOENT') return;
    throw e;
  }
  try {
    await rm(dir, { recursive: true, force: true });
  } catch (e) {
    // Emptied by another remover meanwhile (a sweep, an exit and a stop of one instance): once more finishes it.
    if (errno(e) !== 'ENOTEMPTY' && errno(e) !== 'ENOENT') throw e;
    await rm(dir, { recursive: true, force: true });
  }
}
