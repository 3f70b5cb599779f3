// One notes delivery's time bound, and how to tell a damaged notes cache from a refusal (git-notes-reporter.ts).
import { StatusDeliveryError } from './commit-status.js';

/** Bounds one delivery: aborts its requests, and gives up on the library if it does not notice the abort. */
export class Deadline {
  private readonly controller = new AbortController();
  constructor(
    private readonly ms: number,
    private readonly what: string,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async run<T>(op: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const e = new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${this.what}: no answer within ${this.ms} ms`);
        this.controller.abort(e);
        reject(e);
      }, this.ms);
    });
    try {
      return await Promise.race([op(), expired]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** An error that says the cache's own objects are unreadable (truncated or corrupt), not that the server refused. */
export function damagedCache(e: unknown): boolean {
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 5; x = (x as { cause?: unknown }).cause, depth++)
    if (
      /Invalid compressed buffer|incorrect header check|unexpected end of file|invalid (?:stored block lengths|distance|code)|an object is missing from|SHA check failed|Z_(?:BUF|DATA)_ERROR/i.test(
        x.message,
      )
    )
      return true;
  return false;
}
