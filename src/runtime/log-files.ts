// Component output goes straight to files the child holds itself (O_APPEND fds, not pipes through the agent), so a
// component outlives an agent killed with -9; the agent only rotates them, by copy-then-truncate.
import { constants } from 'node:fs';
import { copyFile, lstat, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { keepEnd, MAX_LINE_BYTES } from '../core/line-bound.js';
import { checkOwnFile, safeDirectory } from '../state-dir/safe-path.js';

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
export async function rotateIfLarger(
  path: string,
  maxBytes: number,
  keep: number,
  onNoSpace?: (path: string, err: Error) => void,
): Promise<boolean> {
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

/** The most a tail reads from the end of a log: `keystonectl logs -n 5000` of ordinary lines fits, and no tail holds more. */
export const MAX_TAIL_BYTES = 4 * 1024 * 1024;

/**
 * How far back a tail looks for the start of a line longer than what it keeps, reading without keeping (one 1 MiB
 * buffer): the cut then says exactly how much it cut. Logs rotate at 10 MiB by default; past this it says `at least`.
 */
export const MAX_LINE_SCAN_BYTES = 64 * 1024 * 1024;

/** The end of a file, as readTail read it. */
export interface TailBytes {
  bytes: Buffer;
  /** The file offset of `bytes`. */
  start: number;
  /** Reading stopped at the byte budget, before enough newlines: the first piece is the end of a line begun earlier. */
  cut: boolean;
  /** When `cut`: where that line begins, if the scan found it (else it began more than MAX_LINE_SCAN_BYTES earlier). */
  lineStart?: number;
}

/**
 * The end of an open file holding at least `newlines` newlines (or the whole file), read backwards in 64 KiB
 * chunks, but never more than those lines can hold at MAX_LINE_BYTES each (nor MAX_TAIL_BYTES): a file of one
 * newline-less line yields its last part, not the whole file. Shared by tailLines and the follows (log-follow.ts).
 */
export async function readTail(h: FileHandle, newlines: number): Promise<TailBytes> {
  const size = (await h.stat()).size;
  const budget = Math.min(MAX_TAIL_BYTES, Math.max(1, newlines) * (MAX_LINE_BYTES + 1));
  let pos = size;
  const chunks: Buffer[] = [];
  let seen = 0;
  while (pos > 0 && seen < newlines && size - pos < budget) {
    const len = Math.min(64 * 1024, pos, budget - (size - pos));
    pos -= len;
    const buf = Buffer.alloc(len);
    const { bytesRead } = await h.read(buf, 0, len, pos);
    const chunk = buf.subarray(0, bytesRead);
    for (const b of chunk) if (b === 0x0a) seen++;
    chunks.unshift(chunk);
  }
  const cut = pos > 0 && seen < newlines;
  return { bytes: Buffer.concat(chunks), start: pos, cut, ...(cut && { lineStart: await lineStartBefore(h, pos) }) };
}

/** The offset just past the last newline before `pos` (0 at the file's start); undefined past MAX_LINE_SCAN_BYTES. */
async function lineStartBefore(h: FileHandle, pos: number): Promise<number | undefined> {
  const buf = Buffer.alloc(Math.min(1024 * 1024, pos));
  const stop = Math.max(0, pos - MAX_LINE_SCAN_BYTES);
  while (pos > stop) {
    const len = Math.min(buf.length, pos - stop);
    pos -= len;
    const { bytesRead } = await h.read(buf, 0, len, pos);
    const nl = buf.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (nl >= 0) return pos + nl + 1;
  }
  return pos === 0 ? 0 : undefined;
}

/** Of the line a tail (or a follow) starts inside: how many of its bytes come before, and whether that is a lower bound. */
export function partBefore(t: TailBytes): { skipped: number; atLeast: boolean } {
  return t.lineStart === undefined
    ? { skipped: t.start - Math.max(0, t.start - MAX_LINE_SCAN_BYTES), atLeast: true }
    : { skipped: t.start - t.lineStart, atLeast: false };
}

/**
 * The lines of `bytes` (a tail ending at a line's end), each held to MAX_LINE_BYTES (its end kept). The first piece
 * is the end of a line that began before the tail: dropped, unless reading stopped at the budget inside a line past
 * the bound, which is then the line to show, cut (with what came before it counted).
 */
export function tailPieces(t: TailBytes, bytes: Buffer = t.bytes, maxLine = MAX_LINE_BYTES): string[] {
  const pieces: Buffer[] = [];
  let from = 0;
  for (let nl = bytes.indexOf(0x0a); nl >= 0; nl = bytes.indexOf(0x0a, from)) {
    pieces.push(bytes.subarray(from, nl));
    from = nl + 1;
  }
  pieces.push(bytes.subarray(from));
  const lines = pieces.map((p) => keepEnd(p, maxLine));
  if (t.start > 0) {
    const first = pieces[0]!;
    if (!t.cut || first.length <= MAX_LINE_BYTES) lines.shift();
    else {
      const { skipped, atLeast } = partBefore(t);
      lines[0] = keepEnd(first, maxLine, skipped, atLeast);
    }
  }
  return lines;
}

/** The last `n` lines of a file (without their newlines, each cut to `maxLine` bytes), reading backwards from the end; [] when it does not exist. */
export async function tailLines(path: string, n: number, maxLine = MAX_LINE_BYTES): Promise<string[]> {
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
    const t = await readTail(h, n + 1);
    const bytes = t.bytes.at(-1) === 0x0a ? t.bytes.subarray(0, -1) : t.bytes;
    if (t.bytes.length === 0) return [];
    return tailPieces(t, bytes, maxLine).slice(-n);
  } finally {
    await h.close();
  }
}

/** Rotates both logs of a component (for the agent's periodic pass); returns the paths it rotated. */
export async function rotateComponentLogs(
  logDir: string,
  maxBytes: number,
  keep: number,
  onNoSpace?: (path: string, err: Error) => void,
): Promise<string[]> {
  // Copies and renames by name: only in a directory reached as openComponentLogs reaches it.
  if (!safeDirectory(logDir)) return [];
  const rotated: string[] = [];
  for (const name of [STDOUT_LOG, STDERR_LOG]) {
    const path = join(logDir, name);
    if (await rotateIfLarger(path, maxBytes, keep, onNoSpace)) rotated.push(path);
  }
  return rotated;
}
