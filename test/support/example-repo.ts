// A throwaway copy of the example repository, as a real Git repository, for tests that edit and commit.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const PROJECT_ROOT = resolve(import.meta.dirname, '../..');

export interface ExampleRepo {
  dir: string;
  git(...args: string[]): string;
  edit(file: string, from: string | RegExp, to: string): void;
  commit(message: string): string;
  cleanup(): void;
}

export function exampleRepo(): ExampleRepo {
  const dir = mkdtempSync(join(tmpdir(), 'keystone-example-'));
  for (const d of ['recipes', 'plans', 'artifacts']) cpSync(join(PROJECT_ROOT, d), join(dir, d), { recursive: true });
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: dir, encoding: 'utf8' }).trim();
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'example');
  return {
    dir,
    git,
    edit(file, from, to) {
      const p = join(dir, file);
      const before = readFileSync(p, 'utf8');
      const after = before.replace(from, to);
      if (after === before) throw new Error(`edit of ${file} changed nothing`);
      writeFileSync(p, after);
    },
    commit(message) {
      git('add', '-A');
      git('commit', '-q', '-m', message);
      return git('rev-parse', 'HEAD');
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
