// Component output goes straight to files the child holds itself (O_APPEND fds, not pipes through the agent), so a
// component outlives an agent killed with -9; the agent only rotates them, by copy-then-truncate.
import { constants } from 'node:fs';
import { copyFile, lstat, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { checkOwnFile, safeDirectory } from './safe-path.js';

export const STDOUT_LOG = 'stdout.log';
export const STDERR_LOG = 'stderr.log';

/** The two log files of a component, open for appending; `close()` once the child has its own copies. */
export interface ComponentLogs {
  stdoutPath: string;
  stderrPath: string;
  stdoutFd: number;
  stderrFd: number;
  close(): Promise<void>;
}

// O_NOFOLLOW: a link planted in the log directory must not redirect the (root) agent's writes.
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

/** Opens (creating) `logDir/stdout.log` and `logDir/stderr.log` with O_APPEND, to hand to a child as fds. */
export async function openComponentLogs(logDir: string): Promise<ComponentLogs> {
  // No link at any level (O_NOFOLLOW alone guards only the file's own name), through directories only the agent's
  // user can change: KS_STATE_DIR_UNSAFE otherwise, and nothing is created.
  safeDirectory(logDir, { mode: 0o750 });
  const stdoutPath = join(logDir, STDOUT_LOG);
  const stderrPath = join(logDir, STDERR_LOG);
  const out = await openOwn(stdoutPath);
  let err: FileHandle;
  try {
    err = await openOwn(stderrPath);
  } catch (e) {
    await out.close();
    throw e;
  }
  return {
    stdoutPath,
    stderrPath,
    stdoutFd: out.fd,
    stderrFd: err.fd,
    close: async () => {
      await Promise.allSettled([out.close(), err.close()]);
    },
  };
}

/** Opens a log for appending; it must be the agent's own file (a planted one is refused, not written to). */
async function openOwn(path: string): Promise<FileHandle> {
  const h = await open(path, APPEND_FLAGS, 0o640);
  try {
    checkOwnFile(path, await h.stat());
  } catch (e) {
    await h.close();
    throw e;
  }
  return h;
}

/**
 * Rotates `path` when it is larger than `maxBytes`: `.N-1` → `.N` … `.1` → `.2`, a copy of `path` becomes `.1`,
 * then `path` is truncated in place, so a child writing with O_APPEND simply continues at the new end. Keeps
 * `keep` old files (0: truncate only). Output written between the copy and the truncation is lost, as with
 * logrotate's copytruncate. Returns true when it rotated.
 *
 * On a full file system the copy cannot be made: the file is truncated without it (`onNoSpace` is told), because a
 * log that can no longer be rotated would otherwise keep the disk full for good, and every component with it.
 */
export async function rotateIfLarger(path: string, maxBytes: number, keep: number, onNoSpace?: (path: string, err: Error) => void): Promise<boolean> {
  let size: number;
  try {
    const st = await lstat(path);
    if (!st.isFile()) return false;
    size = st.size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  if (size <= maxBytes) return false;
  if (keep > 0) {
    await rm(`${path}.${keep}`, { force: true });
    for (let i = keep - 1; i >= 1; i--) {
      try {
        await rename(`${path}.${i}`, `${path}.${i + 1}`);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    try {
      await copyFile(path, `${path}.1`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOSPC' && code !== 'EDQUOT') throw e;
      // The partial copy takes the last of the space: it goes, and the older generations stay as they were renamed.
      await rm(`${path}.1`, { force: true });
      onNoSpace?.(path, e as Error);
    }
  }
  const h = await open(path, constants.O_WRONLY | constants.O_NOFOLLOW);
  try {
    await h.truncate(0);
  } finally {
    await h.close();
  }
  return true;
}

/**
 * The end of an open file holding at least `newlines` newlines (or the whole file), read backwards in
 * 64 KiB chunks: `bytes` starts at offset `start`. Shared by tailLines and `keystonectl logs`.
 */
export async function readTail(h: FileHandle, newlines: number): Promise<{ bytes: Buffer; start: number }> {
  let pos = (await h.stat()).size;
  const chunks: Buffer[] = [];
  let seen = 0;
  while (pos > 0 && seen < newlines) {
    const len = Math.min(64 * 1024, pos);
    pos -= len;
    const buf = Buffer.alloc(len);
    const { bytesRead } = await h.read(buf, 0, len, pos);
    const chunk = buf.subarray(0, bytesRead);
    for (const b of chunk) if (b === 0x0a) seen++;
    chunks.unshift(chunk);
  }
  return { bytes: Buffer.concat(chunks), start: pos };
}

/** The last `n` lines of a file (without their newlines), reading backwards from the end; [] when it does not exist. */
export async function tailLines(path: string, n: number): Promise<string[]> {
  if (n <= 0) return [];
  let h: FileHandle;
  try {
    h = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  try {
    // n lines need n+1 newlines (the one ending the line before them), unless the file starts first.
    const { bytes, start } = await readTail(h, n + 1);
    const lines = bytes.toString('utf8').split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    if (start > 0) lines.shift(); // the first piece may be the tail of a longer line
    return lines.slice(-n);
  } finally {
    await h.close();
  }
}

/** Rotates both logs of a component (for the agent's periodic pass); returns the paths it rotated. */
export async function rotateComponentLogs(logDir: string, maxBytes: number, keep: number, onNoSpace?: (path: string, err: Error) => void): Promise<string[]> {
  // Copies and renames by name: only in a directory reached as openComponentLogs reaches it.
  if (!safeDirectory(logDir)) return [];
  const rotated: string[] = [];
  for (const name of [STDOUT_LOG, STDERR_LOG]) {
    const path = join(logDir, name);
    if (await rotateIfLarger(path, maxBytes, keep, onNoSpace)) rotated.push(path);
  }
  return rotated;
}
