// `keystonectl logs NAME`: a component's output, read straight from the state directory (the agent and keystonectl
// share the device; the agent has no log route). `--follow` polls the file size and survives rotation.
import { constants } from 'node:fs';
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { parseArgs } from 'node:util';
import { OperationError } from '../../core/errors.js';
import { readTail, STDERR_LOG, STDOUT_LOG, tailLines } from '../../runtime/log-files.js';
import { componentArg, stateDirOf } from '../agent-client.js';
import { EXIT, UsageError, type CliIo } from '../io.js';

export const LOGS_USAGE = 'keystonectl logs NAME [--follow] [--lines 50] [--stderr] [--state-dir /var/lib/keystone]';

/** What `logs --follow` adds to the io: a way to stop other than SIGINT, and the poll interval (both for tests). */
export interface LogsIo extends CliIo {
  /** Stops following; without it, SIGINT or SIGTERM does. */
  signal?: AbortSignal;
  /** How often the file size is checked; default 250 ms. */
  followPollMs?: number;
}

const DEFAULT_POLL_MS = 250;

function unreadable(path: string, e: unknown): OperationError {
  const code = (e as NodeJS.ErrnoException).code;
  const hint = code === 'EACCES' ? ': permission denied (component logs are readable by root and the agent\'s group)' : `: ${(e as Error).message}`;
  return new OperationError('KS_LOG_UNREADABLE', `cannot read ${path}${hint}`);
}

export async function logs(argv: string[], io: LogsIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      follow: { type: 'boolean', short: 'f', default: false },
      lines: { type: 'string', short: 'n', default: '50' },
      stderr: { type: 'boolean', default: false },
      'state-dir': { type: 'string' },
    },
  });
  const name = componentArg(positionals, 'logs');
  const lines = Number(values.lines);
  if (!Number.isInteger(lines) || lines < 0) throw new UsageError(`--lines must be a whole number ≥ 0, not "${values.lines}"`);
  const stateDir = stateDirOf(values, io);
  // componentPaths() of the agent, without loading the agent (and SQLite) into the CLI.
  const logDir = join(stateDir, 'components', name, 'logs');
  const path = join(logDir, values.stderr ? STDERR_LOG : STDOUT_LOG);

  // 1. A component this device has never run has no directory: bad input, not an empty log.
  try {
    await stat(logDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw unreadable(logDir, e);
    // A composite (or replicas) has no log of its own: its members do, one directory each under its name.
    const members = await readdir(join(stateDir, 'components', name), { withFileTypes: true }).catch(() => []);
    const named = members.filter((d) => d.isDirectory() && d.name !== 'work' && d.name !== 'logs').map((d) => `${name}/${d.name}`);
    if (named.length) io.stderr.write(`keystonectl logs: ${name} has no log of its own: its members do (${named.sort().join(', ')}); e.g. keystonectl logs ${named[0]}\n`);
    else io.stderr.write(`keystonectl logs: no component "${name}" on this device (no ${logDir}; --state-dir is ${stateDir})\n`);
    return EXIT.BAD_INPUT;
  }

  // 2. The last lines; following starts right after the last complete one.
  if (!values.follow) {
    const tail = await tailLines(path, lines).catch((e: unknown) => {
      throw unreadable(path, e);
    });
    if (tail.length) io.stdout.write(tail.join('\n') + '\n');
    return EXIT.OK;
  }
  const start = await lastCompleteLines(path, lines);
  if (start.lines.length) io.stdout.write(start.lines.join('\n') + '\n');
  await follow(path, start.end, io);
  return EXIT.OK;
}

/** The last `n` complete lines of a file and the offset just past them (a line still being written is left to follow). */
export async function lastCompleteLines(path: string, n: number): Promise<{ lines: string[]; end: number }> {
  let h: FileHandle;
  try {
    h = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], end: 0 };
    throw unreadable(path, e);
  }
  try {
    // The last newline ends the complete part; n more before it start the n lines.
    const { bytes: buf, start: pos } = await readTail(h, n + 1);
    const last = buf.lastIndexOf(0x0a);
    if (last < 0) return { lines: [], end: pos };
    const text = buf.subarray(0, last).toString('utf8').split('\n');
    if (pos > 0) text.shift(); // the first piece is the tail of an earlier line
    return { lines: n === 0 ? [] : text.slice(-n), end: pos + last + 1 };
  } finally {
    await h.close();
  }
}

/**
 * Prints what is appended to `path` from `offset` on, a complete line at a time, until the signal (or SIGINT).
 * Rotation truncates the file in place (copy-then-truncate) or replaces it: either way reading restarts at 0.
 */
async function follow(path: string, offset: number, io: LogsIo): Promise<void> {
  const pollMs = io.followPollMs ?? DEFAULT_POLL_MS;
  const stopper = new AbortController();
  const onSignal = () => stopper.abort();
  if (io.signal) io.signal.addEventListener('abort', onSignal, { once: true });
  else {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  if (io.signal?.aborted) stopper.abort();
  let pos = offset;
  let ino: number | undefined;
  /** The last bytes read, ending at `pos`: how a rotated copy is recognised as this file's past. */
  let recent = Buffer.alloc(0);
  if (offset > 0) await readFrom(path, Math.max(0, offset - 256), offset, (b) => (recent = Buffer.concat([recent, b])));
  const decoder = new StringDecoder('utf8');
  let partial = '';
  const take = (chunk: Buffer) => {
    recent = Buffer.concat([recent, chunk]).subarray(-256);
    partial += decoder.write(chunk);
    const nl = partial.lastIndexOf('\n');
    if (nl < 0) return;
    io.stdout.write(partial.slice(0, nl + 1));
    partial = partial.slice(nl + 1);
  };
  const restart = () => {
    pos = 0;
    recent = Buffer.alloc(0);
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
  try {
    while (!stopper.signal.aborted) if (!(await poll())) await sleep(pollMs, stopper.signal);
    // Stopping: what was written up to now is still output, a last line without its newline too.
    await poll();
    partial += decoder.end();
    if (partial) io.stdout.write(partial + '\n');
  } finally {
    io.signal?.removeEventListener('abort', onSignal);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/**
 * After a truncation at `pos`: the rest of the file as the rotation copied it, from `rotated`, when that copy is
 * this file's (its bytes before `pos` are the ones last read; an older `.1` is another file's past).
 */
async function readRotatedRest(rotated: string, pos: number, recent: Buffer, onChunk: (b: Buffer) => void): Promise<void> {
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
