// Reads repository files from a plain directory (the development source and PR checkouts).
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { escapesRepository } from '../core/recipe.js';
import type { ReadResult, RepoReader } from './repo-reader.js';

export class DirectoryReader implements RepoReader {
  readonly label: string;
  private rootReal: Promise<string>;

  constructor(readonly root: string) {
    this.label = `directory ${root}`;
    this.rootReal = realpath(root);
  }

  async readFile(path: string, maxBytes: number): Promise<ReadResult> {
    if (escapesRepository(path)) return { ok: false, code: 'KS_PATH_ESCAPE', message: `${path} points outside the repository` };
    const root = await this.rootReal;
    let real: string;
    try {
      real = await realpath(join(root, path));
    } catch {
      return { ok: false, code: 'KS_FILE_NOT_FOUND', message: `${path} does not exist` };
    }
    // A symlink inside the repository may point anywhere; only files that really live inside are read.
    if (real !== root && !real.startsWith(root + sep))
      return { ok: false, code: 'KS_PATH_ESCAPE', message: `${path} is a link to ${real}, outside the repository` };
    let fh;
    try {
      // O_NONBLOCK: opening a named pipe planted as a recipe must not wait forever for a writer.
      fh = await open(real, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      return { ok: false, code: 'KS_FILE_NOT_FOUND', message: `${path} cannot be opened: ${(e as Error).message}` };
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) return { ok: false, code: 'KS_NOT_A_FILE', message: `${path} is not a regular file` };
      if (st.size > maxBytes) return { ok: false, code: 'KS_FILE_TOO_LARGE', message: `${path} is ${st.size} bytes, over the limit of ${maxBytes}` };
      // Read at most one byte past the cap, in case the file grows between stat and read.
      const buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      if (bytesRead > maxBytes) return { ok: false, code: 'KS_FILE_TOO_LARGE', message: `${path} is over the limit of ${maxBytes} bytes` };
      return { ok: true, bytes: buf.subarray(0, bytesRead) };
    } finally {
      await fh.close();
    }
  }
}

/** The signed documents of a directory repository: every `.toml` under `recipes/` and `plans/`, sorted. */
export async function listDocuments(root: string): Promise<string[]> {
  const { readdir } = await import('node:fs/promises');
  const out: string[] = [];
  for (const top of ['recipes', 'plans']) {
    let entries;
    try {
      entries = await readdir(join(root, top), { recursive: true, withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (!(e.isFile() || e.isSymbolicLink()) || !e.name.endsWith('.toml')) continue;
      const rel = join(e.parentPath ?? (e as unknown as { path: string }).path, e.name).slice(root.length + 1);
      out.push(rel.split(sep).join('/'));
    }
  }
  return out.sort();
}
