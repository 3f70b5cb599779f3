// The README's room map matches the tree (issue 34): one row per folder of src/ in the order of lint/rooms.mjs (the
// order a room may import in), and one row per top-level folder of the repository; docs/architecture.md states the
// same order. A folder added, moved or removed without its row fails here.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { APART, ROOMS } from '../../lint/rooms.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const map = readme.slice(readme.indexOf('Room map'));
/** The first code span of each row of the room map's table: `src/core/`, `recipes/`, `.ci/run` … */
const rows = map
  .slice(0, map.indexOf('\n\n', map.indexOf('| folder |')))
  .split('\n')
  .filter((l) => l.startsWith('| `'))
  .flatMap((l) => [...l.split('|')[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));

const folders = (dir: string) => readdirSync(dir).filter((f) => statSync(join(dir, f)).isDirectory());

describe("the README's room map", () => {
  it('has one row per room of src/, in the order of lint/rooms.mjs', () => {
    const srcRows = rows.filter((r) => r.startsWith('src/')).map((r) => r.slice(4).replace(/\/$/, ''));
    const rooms = [...ROOMS, ...APART].filter((r) => !r.endsWith('.ts'));
    expect(srcRows).toEqual(rooms);
    expect(new Set(folders(join(ROOT, 'src')))).toEqual(new Set(rooms));
  });

  it('has a row for every top-level folder of the repository', () => {
    const ignored = new Set([
      'node_modules',
      'dist',
      'dist-bundle',
      'dist-deb',
      'coverage',
      'src',
      '.git',
      '.state',
      '.github',
      '.ci',
    ]);
    const top = folders(ROOT).filter((f) => !ignored.has(f) && !f.startsWith('.'));
    expect(top.filter((f) => !rows.includes(`${f}/`))).toEqual([]);
    expect(rows).toContain('.ci/run');
  });

  it('is in the order docs/architecture.md states', () => {
    const arch = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const line = arch.slice(arch.indexOf('`core` →'), arch.indexOf('stands apart'));
    expect([...line.matchAll(/`([^`]+)`/g)].map((m) => m[1])).toEqual([...ROOMS, ...APART]);
  });
});
