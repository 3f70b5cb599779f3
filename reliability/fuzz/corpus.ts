// The corpus kept in the repository: reliability/fuzz/corpus/<target>/ holds valid examples (the seeds the mutator
// starts from) and, under crashes/, every input that once broke a parser (replayed by fuzz-regressions.test.ts).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CORPUS_DIR = fileURLToPath(new URL('./corpus/', import.meta.url));

export interface CorpusFile {
  path: string;
  bytes: Uint8Array;
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? filesUnder(p) : f === 'README.md' ? [] : [p];
    });
}

/** Every file of the target's corpus, crashes included (a crash is a good seed for the next run too). */
export function loadCorpus(target: string, root = CORPUS_DIR): CorpusFile[] {
  return filesUnder(join(root, target)).map((path) => ({ path, bytes: new Uint8Array(readFileSync(path)) }));
}

/** Only the inputs that once broke the target. */
export function loadCrashes(target: string, root = CORPUS_DIR): CorpusFile[] {
  return filesUnder(join(root, target, 'crashes')).map((path) => ({ path, bytes: new Uint8Array(readFileSync(path)) }));
}

/** Writes a counterexample under `dir/<target>/`, named by its hash so the same input is kept once. */
export function saveFinding(dir: string, target: string, bytes: Uint8Array): string {
  const out = join(dir, target);
  mkdirSync(out, { recursive: true });
  const path = join(out, `${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}.bin`);
  writeFileSync(path, bytes);
  return path;
}
