// Server-Sent Events over fetch rather than EventSource: EventSource cannot send the CSRF header the API requires.
import { createParser } from 'eventsource-parser';
import { ApiError, request } from './api-client.js';

export interface StreamHandlers {
  /** The response arrived: the stream is connected (and a reconnect must assume it missed events). */
  onOpen?(): void;
  onEvent(type: string, data: unknown): void;
  /** true while connected, false while waiting to reconnect. */
  onLive?(live: boolean): void;
  /** An answer that a retry would not change (404, 400 …): following stops. */
  onFatal?(error: ApiError): void;
}

/** The server comments every 15 s; this much silence means the connection died without closing. */
const IDLE_MS = 40_000;
const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 15_000;

function parseData(data: string): unknown {
  if (data === '') return {};
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/** Reads one response to its end (or to IDLE_MS of silence); rejects on an error answer or an abort. */
async function readOnce(path: string, signal: AbortSignal, handlers: StreamHandlers): Promise<void> {
  const res = await request(path, { signal, headers: { Accept: 'text/event-stream' } });
  if (!res.body) return;
  handlers.onOpen?.();
  handlers.onLive?.(true);
  const parser = createParser({ onEvent: (m) => handlers.onEvent(m.event ?? 'message', parseData(m.data)) });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let idle: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => void reader.cancel().catch(() => undefined), IDLE_MS);
  };
  try {
    arm();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      arm();
      parser.feed(value);
    }
  } finally {
    clearTimeout(idle);
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * Follows an event stream until the returned function is called, reconnecting with a growing delay whenever it ends.
 * A 401 stops it (the session is over and the page goes back to the login form).
 */
export function followEventStream(path: string, handlers: StreamHandlers): () => void {
  const ctl = new AbortController();
  void (async () => {
    let delay = FIRST_DELAY_MS;
    while (!ctl.signal.aborted) {
      const started = Date.now();
      try {
        await readOnce(path, ctl.signal, handlers);
      } catch (e) {
        if (ctl.signal.aborted) return;
        if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429) {
          handlers.onLive?.(false);
          if (e.status !== 401) handlers.onFatal?.(e);
          return;
        }
      }
      if (ctl.signal.aborted) return;
      handlers.onLive?.(false);
      // A stream that lasted a while ended normally (a restart of the agent, a proxy's timeout): retry soon.
      if (Date.now() - started > 30_000) delay = FIRST_DELAY_MS;
      await sleep(delay * (0.75 + Math.random() / 2), ctl.signal);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  })();
  return () => ctl.abort();
}
