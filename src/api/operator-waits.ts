// How an operator call waits for the engine (SPEC §10 `wait=` and `timeout=`): for the whole operation (health), for
// new instances to be spawned (started), and never longer than its timeout or past the server's shutdown. Waiting
// never cancels anything: the engine carries the operation through whatever the HTTP call does.
import type { EventEmitter } from 'node:events';
import type { AgentEventMap } from '../agent/agent.js';

export type WaitOutcome<T> =
  | { kind: 'done'; result: T }
  /** What `until` stood for happened before the operation finished. */
  | { kind: 'reached' }
  | { kind: 'timeout' }
  | { kind: 'closing' };

interface StartWatcher {
  remaining: Set<string>;
  resolve: () => void;
}

export class OperatorWaits {
  private readonly watchers = new Set<StartWatcher>();
  private readonly closing = new AbortController();
  // One listener for all waits, however many calls are in flight.
  private readonly onStarted = ({ component }: AgentEventMap['started'][0]) => {
    for (const w of this.watchers) {
      w.remaining.delete(component);
      if (w.remaining.size === 0) {
        this.watchers.delete(w);
        w.resolve();
      }
    }
  };

  constructor(private readonly events: EventEmitter<AgentEventMap>) {
    events.on('started', this.onStarted);
  }

  /**
   * Resolves once each of `names` has had a new instance spawned. Call it before handing the operation to the
   * engine: a start that happens before the watch exists is not seen.
   */
  starts(names: readonly string[]): { done: Promise<void>; cancel(): void } {
    let watcher: StartWatcher | undefined;
    const done = new Promise<void>((resolve) => {
      if (names.length === 0) return resolve();
      watcher = { remaining: new Set(names), resolve };
      this.watchers.add(watcher);
    });
    return { done, cancel: () => void (watcher && this.watchers.delete(watcher)) };
  }

  /** Waits for `op` (or `until`, when given) for at most `timeoutMs`. A rejection of `op` is thrown. */
  async wait<T>(op: Promise<T>, timeoutMs: number, until?: Promise<void>): Promise<WaitOutcome<T>> {
    if (this.closing.signal.aborted) return { kind: 'closing' };
    let timer: NodeJS.Timeout | undefined;
    let onClose: (() => void) | undefined;
    const signal = this.closing.signal;
    try {
      return await Promise.race<WaitOutcome<T>>([
        op.then((result) => ({ kind: 'done', result })),
        ...(until ? [until.then((): WaitOutcome<T> => ({ kind: 'reached' }))] : []),
        new Promise<WaitOutcome<T>>((resolve) => (timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs))),
        new Promise<WaitOutcome<T>>((resolve) =>
          signal.addEventListener('abort', (onClose = () => resolve({ kind: 'closing' })), { once: true }),
        ),
      ]);
    } finally {
      clearTimeout(timer);
      if (onClose) signal.removeEventListener('abort', onClose);
    }
  }

  /** Aborted when the server closes: a streamed answer ends then instead of holding the shutdown. */
  get closingSignal(): AbortSignal {
    return this.closing.signal;
  }

  /** The server is closing: every wait answers now (503) instead of holding the shutdown for its timeout. */
  close(): void {
    this.closing.abort();
    this.events.off('started', this.onStarted);
    this.watchers.clear();
  }
}
