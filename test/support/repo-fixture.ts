// Throwaway desired-state repositories on disk, for tests of the load phase against a real filesystem.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface TempRepo {
  /** Absolute path of the repository root. */
  dir: string;
  /** Writes a repository-relative file, creating its directories. */
  write(path: string, content: string | Uint8Array): void;
  /** Creates a repository-relative directory (and its parents). */
  mkdir(path: string): void;
  /** Makes `path` (repository-relative) a symbolic link to `target` (absolute, or relative to the link's directory). */
  symlink(target: string, path: string): void;
  cleanup(): void;
}

/** A fresh temporary directory holding `files` (repository-relative path → content). */
export function tempRepo(files: Record<string, string | Uint8Array> = {}, prefix = 'keystone-repo-'): TempRepo {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const repo: TempRepo = {
    dir,
    write(path, content) {
      const abs = join(dir, path);
      mkdirSync(dirname(abs), { recursive: true });
      writeFileSync(abs, content);
    },
    mkdir(path) {
      mkdirSync(join(dir, path), { recursive: true });
    },
    symlink(target, path) {
      const abs = join(dir, path);
      mkdirSync(dirname(abs), { recursive: true });
      symlinkSync(target, abs);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
  for (const [path, content] of Object.entries(files)) repo.write(path, content);
  return repo;
}
