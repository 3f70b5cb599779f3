// A container's output into the component's log files: the engine keeps it (json-file, bounded) and the agent
// follows it with timestamps, remembering the last one copied, so an agent that restarts resumes where it stopped.
import { write } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { openComponentLogs } from './log-files.js';

const writeFd = promisify(write);

/** The last copied line's engine timestamp, per container, beside the log files. */
export const LOG_CURSOR_FILE = '.container-log-cursor';

export interface LogPump {
  /** Resolves when the engine ended the stream (the container stopped and its output is copied) or stop() was called. */
  done: Promise<void>;
  stop(): void;
}

export interface LogPumpOptions {
  now?: () => number;
  /** How often the cursor is written while output flows; at most this much output is copied twice after a crash. */
  cursorSaveMs?: number;
  onError?: (e: Error) => void;
}

/**
 * Follows `container`'s stdout and stderr from the engine into `logDir/stdout.log` and `stderr.log` (appending),
 * from the saved cursor when it is this container's, else from its first line.
 */
export function pumpContainerLogs(container: Docker.Container, logDir: string, opts: LogPumpOptions = {}): LogPump {
  const abort = new AbortController();
  const now = opts.now ?? Date.now;
  const cursorPath = join(logDir, LOG_CURSOR_FILE);
  const done = (async () => {
    const logs = await openComponentLogs(logDir);
    const resumeFrom = await readCursor(cursorPath, container.id);
    let cursor = resumeFrom;
    let saved = cursor;
    let lastSave = now();
    const save = async () => {
      if (cursor === saved || cursor === undefined) return;
      const tmp = `${cursorPath}.tmp`;
      await writeFile(tmp, JSON.stringify({ container: container.id, ns: cursor.toString() }));
      await rename(tmp, cursorPath);
      saved = cursor;
      lastSave = now();
    };
    try {
      const stream = (await container.logs({
        follow: true,
        stdout: true,
        stderr: true,
        timestamps: true,
        since: resumeFrom === undefined ? 0 : nsToSince(resumeFrom),
        abortSignal: abort.signal,
      })) as NodeJS.ReadableStream;
      const frames = new FrameParser();
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        for (const f of frames.push(chunk)) {
          const sp = f.payload.indexOf(0x20);
          const ns = sp > 0 ? timestampNs(f.payload.subarray(0, sp).toString()) : undefined;
          // `since` is inclusive: what the cursor names was copied before.
          if (ns !== undefined && resumeFrom !== undefined && ns <= resumeFrom) continue;
          (f.stream === 2 ? err : out).push(ns === undefined ? f.payload : f.payload.subarray(sp + 1));
          if (ns !== undefined) cursor = ns;
        }
        if (out.length) await writeAll(logs.stdoutFd, Buffer.concat(out));
        if (err.length) await writeAll(logs.stderrFd, Buffer.concat(err));
        if (now() - lastSave >= (opts.cursorSaveMs ?? 1000)) await save();
      }
    } catch (e) {
      if (!abort.signal.aborted) opts.onError?.(e as Error);
    } finally {
      await save().catch((e: Error) => opts.onError?.(e));
      await logs.close();
    }
  })().catch((e: Error) => opts.onError?.(e));
  return { done, stop: () => abort.abort() };
}

async function writeAll(fd: number, buf: Buffer): Promise<void> {
  let off = 0;
  while (off < buf.length) off += (await writeFd(fd, buf, off, buf.length - off)).bytesWritten;
}

async function readCursor(path: string, containerId: string): Promise<bigint | undefined> {
  try {
    const v = JSON.parse(await readFile(path, 'utf8')) as { container?: unknown; ns?: unknown };
    return v.container === containerId && typeof v.ns === 'string' && /^\d+$/.test(v.ns) ? BigInt(v.ns) : undefined;
  } catch {
    return undefined;
  }
}

/** Nanoseconds since the epoch of an RFC 3339 timestamp with up to nine fraction digits (the engine's). */
export function timestampNs(ts: string): bigint | undefined {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(ts);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms / 1000) * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
}

/** The engine's `since` for a nanosecond time: `seconds.nanoseconds`. */
export function nsToSince(ns: bigint): string {
  return `${ns / 1_000_000_000n}.${(ns % 1_000_000_000n).toString().padStart(9, '0')}`;
}

/** The engine's multiplexed stream (no TTY): an 8-byte header (stream, 0, 0, 0, size as uint32 BE), then the payload. */
export class FrameParser {
  private buf: Buffer = Buffer.alloc(0);
  push(chunk: Buffer): { stream: number; payload: Buffer }[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out: { stream: number; payload: Buffer }[] = [];
    while (this.buf.length >= 8) {
      const size = this.buf.readUInt32BE(4);
      if (this.buf.length < 8 + size) break;
      out.push({ stream: this.buf[0]!, payload: this.buf.subarray(8, 8 + size) });
      this.buf = this.buf.subarray(8 + size);
    }
    return out;
  }
}
