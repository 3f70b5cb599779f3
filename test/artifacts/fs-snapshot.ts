// Test helpers: temp directories, and a snapshot of a tree (without following links) to prove nothing changed.
import { createHash } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temp directory; remove it with `cleanup`. */
export function tempDir(prefix: string): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every path under `root` with its type, permission bits and content hash (or link target). */
export function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    const abs = rel ? join(root, rel) : root;
    const st = lstatSync(abs);
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) out[rel] = `link -> ${readlinkSync(abs)}`;
    else if (st.isFile()) out[rel] = `file ${mode} ${createHash('sha256').update(readFileSync(abs)).digest('hex').slice(0, 16)}`;
    else if (st.isDirectory()) {
      out[rel] = `dir ${mode}`;
      for (const name of readdirSync(abs).sort()) walk(rel ? `${rel}/${name}` : name);
    } else out[rel] = 'other';
  };
  walk('');
  return out;
}
