import { readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openComponentLogs, rotateComponentLogs, rotateIfLarger, tailLines } from '../../src/runtime/log-files.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import type { Instance } from '../../src/runtime/runtime.js';
import { GroupReaper, processComponent, readOr, tempRoot, waitFor } from './runtime-fixtures.js';

const reaper = new GroupReaper();
let tmp: Awaited<ReturnType<typeof tempRoot>>;
beforeEach(async () => {
  tmp = await tempRoot();
});
afterEach(async () => {
  await reaper.killAll();
  await tmp.cleanup();
});

describe('rotateIfLarger', () => {
  it('does nothing below the size, then keeps exactly N old files, newest in .1', async () => {
    const log = join(tmp.root, 'x.log');
    expect(await rotateIfLarger(log, 10, 2)).toBe(false); // missing file
    await writeFile(log, 'small\n');
    expect(await rotateIfLarger(log, 10, 2)).toBe(false);
    for (const gen of ['first', 'second', 'third', 'fourth']) {
      await writeFile(log, `${gen} generation\n`);
      expect(await rotateIfLarger(log, 10, 2)).toBe(true);
      expect((await stat(log)).size).toBe(0);
    }
    expect((await readdir(tmp.root)).filter((f) => f.startsWith('x.log')).sort()).toEqual([
      'x.log',
      'x.log.1',
      'x.log.2',
    ]);
    expect(await readOr(`${log}.1`)).toBe('fourth generation\n');
    expect(await readOr(`${log}.2`)).toBe('third generation\n');
  });

  it('rotateComponentLogs rotates whichever of stdout.log and stderr.log is too large', async () => {
    const dir = join(tmp.root, 'comp');
    await openComponentLogs(dir).then((l) => l.close());
    await writeFile(join(dir, 'stderr.log'), 'x'.repeat(50));
    expect(await rotateComponentLogs(dir, 10, 3)).toEqual([join(dir, 'stderr.log')]);
    expect(await readOr(join(dir, 'stderr.log.1'))).toBe('x'.repeat(50));
  });

  it('keep = 0 only truncates', async () => {
    const log = join(tmp.root, 'y.log');
    await writeFile(log, 'x'.repeat(100));
    expect(await rotateIfLarger(log, 10, 0)).toBe(true);
    expect((await readdir(tmp.root)).filter((f) => f.startsWith('y.log'))).toEqual(['y.log']);
  });

  it('a running component keeps writing at the start of the truncated file (O_APPEND, no hole)', async () => {
    const paths = tmp.paths('chatty');
    const rt = new ProcessRuntime({ installArtifacts: async () => {} });
    const c = processComponent('chatty', {
      command: 'node',
      args: ['-e', "let n = 0; setInterval(() => console.log('line ' + n++), 5)"],
    });
    const i: Instance = await rt.start(c, paths);
    if (i.ref.kind === 'process') reaper.add(i.ref.pid);
    const log = join(paths.logDir, 'stdout.log');
    for (let round = 0; round < 3; round++) {
      await waitFor(async () => (await stat(log)).size > 200, 'the log to grow');
      expect(await rotateIfLarger(log, 200, 2)).toBe(true);
    }
    await waitFor(async () => (await readOr(log)).includes('\n'), 'new output after the rotation');
    const numbers = (text: string) =>
      text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          expect(l).toMatch(/^line \d+$/); // no NUL hole, no torn line at the start
          return Number(l.slice(5));
        });
    const now = numbers(await readOr(log));
    const before = numbers(await readOr(`${log}.1`));
    now.forEach((n, k) => k > 0 && expect(n).toBe(now[k - 1]! + 1));
    expect(now[0]).toBeGreaterThan(before[before.length - 1]!);
    expect((await stat(`${log}.1`)).size).toBeGreaterThan(200);
    expect((await readdir(paths.logDir)).sort()).toEqual(['stderr.log', 'stdout.log', 'stdout.log.1', 'stdout.log.2']);
  });
});

describe('openComponentLogs', () => {
  it('refuses a symlink planted where a log file goes', async () => {
    const dir = join(tmp.root, 'logs');
    await openComponentLogs(dir).then((l) => l.close());
    const target = join(tmp.root, 'secret');
    await writeFile(target, 'secret\n');
    await rm(join(dir, 'stdout.log'));
    await symlink(target, join(dir, 'stdout.log'));
    await expect(openComponentLogs(dir)).rejects.toMatchObject({ code: 'ELOOP' });
  });
});

describe('tailLines', () => {
  it('returns the last n lines, with or without a final newline, across chunk boundaries', async () => {
    const f = join(tmp.root, 't.log');
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i} ${'x'.repeat(i % 50)}`);
    await writeFile(f, lines.join('\n') + '\n');
    expect(await tailLines(f, 3)).toEqual(lines.slice(-3));
    expect(await tailLines(f, 4000)).toEqual(lines.slice(-4000));
    expect(await tailLines(f, 10_000)).toEqual(lines);
    await writeFile(f, 'a\nb\nc');
    expect(await tailLines(f, 2)).toEqual(['b', 'c']);
    expect(await tailLines(f, 0)).toEqual([]);
    expect(await tailLines(join(tmp.root, 'missing'), 5)).toEqual([]);
  });
});
