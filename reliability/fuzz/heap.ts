// Heap figures for the report: collected before the first and after the last input (V8's gc, exposed at run time so
// that `node reliability/fuzz.mjs` needs no flag), sampled in between for the peak.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

/** A full collection, so that two readings compare what is still reachable, not what is garbage yet. */
export function collect(): void {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}

export const heapMb = (): number => process.memoryUsage().heapUsed / 1024 / 1024;

/**
 * Lets the event loop turn once. A synchronous parser fuzzed in a loop of promises never yields to it, and Node frees
 * some things only there: a zlib engine that failed (inflateSync on a corrupt stream) is closed on a later tick, ~2 KB
 * each, which looked like a leak of 74 MB over 100,000 thin packs until the loop was let turn.
 */
export const turnEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class HeapSampler {
  readonly startMb: number;
  peakMb: number;

  constructor() {
    collect();
    this.startMb = heapMb();
    this.peakMb = this.startMb;
  }

  sample(): void {
    this.peakMb = Math.max(this.peakMb, heapMb());
  }

  /** After a collection: what the runs left reachable. */
  async finish(): Promise<{ startMb: number; peakMb: number; endMb: number; growthMb: number }> {
    await turnEventLoop();
    collect();
    const endMb = heapMb();
    this.peakMb = Math.max(this.peakMb, endMb);
    const round = (x: number) => Math.round(x * 10) / 10;
    return {
      startMb: round(this.startMb),
      peakMb: round(this.peakMb),
      endMb: round(endMb),
      growthMb: round(endMb - this.startMb),
    };
  }
}
