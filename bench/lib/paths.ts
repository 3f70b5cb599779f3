// Where the benches are (bench/, its results/), the project they measure, and a directory made when missing.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const projectDir = join(benchDir, '..');
export const KEYSTONE_BIN = join(projectDir, 'bin', 'keystone.js');

export function ensureDir(dir: string): string {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  return dir;
}
