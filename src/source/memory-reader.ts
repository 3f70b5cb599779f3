// A revision held in memory: the files `keystonectl apply` sent to the agent. Read like any other source, so the same
// verification and loading apply to it (the agent trusts its own keyring, never the sender's check).
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { escapesRepository } from '../core/recipe.js';
import type { ReadResult, RepoReader } from './repo-reader.js';

export class MemoryReader implements RepoReader {
  private readonly files: ReadonlyMap<string, Uint8Array>;

  constructor(
    files: ReadonlyMap<string, Uint8Array>,
    readonly label: string,
  ) {
    // Stored under their normal form so that `recipes/./a.toml` and `recipes/a.toml` are one file.
    this.files = new Map([...files].map(([p, b]) => [posix.normalize(p), b]));
  }

  async readFile(path: string, maxBytes: number): Promise<ReadResult> {
    if (escapesRepository(path))
      return { ok: false, code: 'KS_PATH_ESCAPE', message: `${path} points outside the repository` };
    const bytes = this.files.get(posix.normalize(path));
    if (!bytes) return { ok: false, code: 'KS_FILE_NOT_FOUND', message: `${path} was not sent with this apply` };
    if (bytes.length > maxBytes)
      return {
        ok: false,
        code: 'KS_FILE_TOO_LARGE',
        message: `${path} is ${bytes.length} bytes, over the limit of ${maxBytes}`,
      };
    return { ok: true, bytes };
  }

  /** `manual:<12 hex>`: the hash of every path and its content, so the same files make the same revision id. */
  revisionId(): string {
    const h = createHash('sha256');
    for (const p of [...this.files.keys()].sort())
      h.update(`${p}\0${createHash('sha256').update(this.files.get(p)!).digest('hex')}\n`);
    return `manual:${h.digest('hex').slice(0, 12)}`;
  }
}
