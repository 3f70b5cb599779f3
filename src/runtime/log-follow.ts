// A component log's last lines and what is appended after them, for `keystonectl logs --follow` and the API's
// GET /v1/logs/{name}?follow=true: polling the file size (no inotify: it misses writes through other mounts and
// costs a watch per follower) and surviving rotation, which truncates the file in place or replaces it.
import { constants } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { OperationError } from '../core/errors.js';
import { MAX_LINE_BYTES } from '../core/line-bound.js';
import { LineCutter } from './line-cutter.js';
import { partBefore, readTail, tailPieces } from './log-files.js';

export interface FollowOptions {
  /** Stops following; what was written up to then is still delivered. */
  signal: AbortSignal;
  /** How often the file size is checked. */
  pollMs: number;
  /** Complete lines, newline included (several at once), each cut to MAX_LINE_BYTES; the last unfinished one only when stopping. */
  onText(text: string): void;
  /** The file was truncated or replaced (rotation); reading goes on from its start. */
  onRotated?(): void;
  /** `offset` is inside a line, this many bytes of which came before (lastCompleteLines says so): counted in its cut. */
  before?: { skipped: number; atLeast: boolean };
}

/** KS_LOG_UNREADABLE: the path and why (permission, a link planted where a log should be, …). */
export function unreadable(path: string, e: unknown): OperationError {
  const code = (e as NodeJS.ErrnoException).code;
  const hint =
    code === 'EACCES'
      ? ": permission denied (component logs are readable by root and the agent's group)"
      : `: ${(e as Error).message}`;
  return new OperationError('KS_LOG_UNREADABLE', `cannot read ${path}${hint}`);
}

/**
 * The last `n` complete lines of a file (each cut to MAX_LINE_BYTES) and the offset just past them (a line still
 * being written is left to follow). `before`: no newline was found within what a tail reads, so following starts
 * inside a line, this many bytes of which came before `end` (its first line then says how much was cut).
 */
export async function lastCompleteLines(
  path: string,
  n: number,
): Promise<{ lines: string[]; end: number; before?: { skipped: number; atLeast: boolean } }> {
  let h: FileHandle;
  try {
    h = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], end: 0 };
    throw unreadable(path, e);
  }
  try {
    // The last newline ends the complete part; n more before it start the n lines.
    const t = await readTail(h, n + 1);
    const last = t.bytes.lastIndexOf(0x0a);
    if (last < 0) return { lines: [], end: t.start, ...(t.start > 0 && { before: partBefore(t) }) };
    return { lines: n === 0 ? [] : tailPieces(t, t.bytes.subarray(0, last)).slice(-n), end: t.start + last + 1 };
  } finally {
    await h.close();
  }
}

/**
 * Delivers what is appended to `path` from `offset` on, complete lines at a time, until the signal.
 * Rotation truncates the file in place (copy-then-truncate) or replaces it: either way reading restarts at 0.
 */
export async function followLog(path: string, offset: number, opts: FollowOptions): Promise<void> {
  const { pollMs, signal } = opts;
  let pos = offset;
  let ino: number | undefined;
  /** The last bytes read, ending at `pos`: how a rotated copy is recognised as this file's past. */
  let recent = Buffer.alloc(0);
  if (offset > 0) await readFrom(path, Math.max(0, offset - 256), offset, (b) => (recent = Buffer.concat([recent, b])));
  // A line that never ends (a progress bar) is held to its last MAX_LINE_BYTES, not kept growing.
  const lines = new LineCutter(MAX_LINE_BYTES, opts.before);
  const take = (chunk: Buffer) => {
    recent = Buffer.concat([recent, chunk]).subarray(-256);
    const done = lines.push(chunk);
    if (done.length) opts.onText(`${done.join('\n')}\n`);
  };
  const restart = () => {
    pos = 0;
    recent = Buffer.alloc(0);
    opts.onRotated?.();
  };
  /** One look at the file; true when it read something. */
  const poll = async (): Promise<boolean> => {
    let size: number;
    try {
      const st = await stat(path);
      if (ino !== undefined && st.ino !== ino) restart(); // replaced by a new file
      ino = st.ino;
      size = st.size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw unreadable(path, e);
    }
    if (size < pos) {
      // Truncated by rotation (copy-then-truncate): what was not read yet is at the end of the copy, `.1`.
      await readRotatedRest(`${path}.1`, pos, recent, take);
      restart();
    }
    if (size <= pos) return false;
    pos += await readFrom(path, pos, size, take);
    return true;
  };
  while (!signal.aborted) if (!(await poll())) await sleep(pollMs, signal);
  // Stopping: what was written up to now is still delivered, a last line without its newline too.
  await poll();
  const partial = lines.end();
  if (partial !== undefined) opts.onText(`${partial}\n`);
}

/**
 * After a truncation at `pos`: the rest of the file as the rotation copied it, from `rotated`, when that copy is
 * this file's (its bytes before `pos` are the ones last read; an older `.1` is another file's past).
 */
async function readRotatedRest(
  rotated: string,
  pos: number,
  recent: Buffer,
  onChunk: (b: Buffer) => void,
): Promise<void> {
  if (recent.length === 0) return;
  let h: FileHandle;
  try {
    h = await open(rotated, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return;
  }
  let size: number;
  try {
    size = (await h.stat()).size;
    if (size <= pos) return;
    const seen = Buffer.alloc(recent.length);
    const { bytesRead } = await h.read(seen, 0, recent.length, pos - recent.length);
    if (bytesRead !== recent.length || !seen.equals(recent)) return;
  } finally {
    await h.close();
  }
  await readFrom(rotated, pos, size, onChunk);
}

/** Reads [from, to) in chunks; returns how many bytes were read (fewer when the file shrank meanwhile). */
async function readFrom(path: string, from: number, to: number, onChunk: (b: Buffer) => void): Promise<number> {
  let h: FileHandle;
  try {
    h = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw unreadable(path, e);
  }
  try {
    let pos = from;
    const buf = Buffer.alloc(64 * 1024);
    while (pos < to) {
      const { bytesRead } = await h.read(buf, 0, Math.min(buf.length, to - pos), pos);
      if (bytesRead === 0) break;
      onChunk(Buffer.from(buf.subarray(0, bytesRead)));
      pos += bytesRead;
    }
    return pos - from;
  } finally {
    await h.close();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
