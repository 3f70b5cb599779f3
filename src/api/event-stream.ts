// A Server-Sent Events answer (GET /v1/events, GET /v1/logs/{name}?follow=true): the response is taken over from the
// router and written frame by frame until the client goes, the server closes, or the client reads too slowly.
import type { ApiReply } from './api-reply.js';
import { ApiError } from './api-error.js';

/** A comment line this often keeps proxies and tunnels from closing a quiet stream, and tells the page it is alive. */
export const KEEP_ALIVE_MS = 15_000;
/** Unsent bytes beyond this mean the client stopped reading: it is dropped rather than buffered without end. */
const MAX_BUFFERED = 1024 * 1024;

export interface EventStream {
  send(type: string, data: unknown): void;
  /** Resolves when the stream has ended, for whatever reason. */
  readonly closed: Promise<void>;
  /** Aborted when the stream ends. */
  readonly signal: AbortSignal;
  close(): void;
}

/** Counts the streams open at once: each holds a connection and a descriptor of the agent. */
export class StreamSlots {
  private open = 0;
  constructor(readonly max: number) {}

  take(what: string): () => void {
    if (this.open >= this.max)
      throw new ApiError(
        503,
        'KS_TOO_MANY_STREAMS',
        `${this.max} ${what} streams are open already; close one (or another browser tab) and try again`,
      );
    this.open++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.open--;
    };
  }
}

/**
 * Starts the stream. `closing` is the server's shutdown signal: streams end then instead of holding the close.
 * The caller has already checked the request; what it sends goes out at once (nothing is buffered on its way).
 */
export function openEventStream(
  reply: ApiReply,
  opts: { closing: AbortSignal; release: () => void; keepAliveMs?: number },
): EventStream {
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    // The hooks that set these on every other answer do not run for a hijacked one.
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // nginx and the like buffer answers unless told: a live view would arrive in bursts.
    'x-accel-buffering': 'no',
    connection: 'keep-alive',
  });
  // A client that reconnects (EventSource, or the dashboard) waits this long first.
  raw.write('retry: 3000\n\n');
  const ended = new AbortController();
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const timer = setInterval(() => write(': keep-alive\n\n'), opts.keepAliveMs ?? KEEP_ALIVE_MS);
  timer.unref();
  const close = () => {
    if (ended.signal.aborted) return;
    ended.abort();
    clearInterval(timer);
    opts.closing.removeEventListener('abort', close);
    raw.off('close', close);
    opts.release();
    if (!raw.writableEnded) raw.end();
    resolveClosed();
  };
  const write = (text: string) => {
    if (ended.signal.aborted) return;
    raw.write(text);
    if (raw.writableLength > MAX_BUFFERED) {
      // Not ended gracefully: a client this far behind would only get the end after everything queued before it.
      raw.destroy();
      close();
    }
  };
  opts.closing.addEventListener('abort', close, { once: true });
  // The response's close, not the request's: a request's 'close' comes once its (empty) body has been read.
  raw.on('close', close);
  // HEAD asks for the headers alone: a stream would hold a slot with nothing ever sent (Node sends no body for HEAD).
  if (opts.closing.aborted || raw.req?.method === 'HEAD') close();
  return {
    // One data line: JSON never holds a raw newline, so no frame can be split or forged by what a component logs.
    send: (type, data) => write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`),
    closed,
    signal: ended.signal,
    close,
  };
}
