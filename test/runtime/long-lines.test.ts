// Tails and follows of a log whose line never ends (issue 28, finding 7): a file of one 100 MB line yields its last
// bounded part, read from the end in bounded chunks, and a follow holds such a line to the bound however long it grows.
import { open, writeFile, appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES } from '../../src/core/line-bound.js';
import { LineCutter } from '../../src/runtime/line-cutter.js';
import { MAX_LINE_SCAN_BYTES, tailLines } from '../../src/runtime/log-files.js';
import { followLog, lastCompleteLines } from '../../src/runtime/log-follow.js';
import { tempRoot } from './runtime-fixtures.js';

const LINE = 100 * 1000 * 1000;
const CUT_LINE = MAX_LINE_BYTES + 64;

let tmp: Awaited<ReturnType<typeof tempRoot>>;
beforeEach(async () => {
  tmp = await tempRoot();
});
afterEach(async () => {
  await tmp.cleanup();
});

/** `before`, then `size` bytes of `\r`-separated progress with no newline, then `end`. */
async function progressFile(path: string, before: string, size: number, end: string): Promise<void> {
  const h = await open(path, 'w');
  try {
    await h.write(before);
    const chunk = Buffer.from('progress 42%\r'.repeat(80_000));
    for (let n = 0; n < size; n += chunk.length) await h.write(chunk, 0, Math.min(chunk.length, size - n));
    await h.write(end);
  } finally {
    await h.close();
  }
}

describe('a 100 MB line without a newline', () => {
  it('tailLines yields its last bounded part, cut (reading from the end stops inside it), and short lines after it whole', async () => {
    const f = join(tmp.root, 'stderr.log');
    await progressFile(f, 'first line\nsecond line\n', LINE, '\rprogress 100%');
    const t0 = Date.now();
    const tail = await tailLines(f, 3);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(tail).toHaveLength(1);
    expect(tail[0]!.length).toBeLessThan(CUT_LINE);
    expect(tail[0]).toMatch(/^… \[cut: at least \d+ bytes\] .*\rprogress 100%$/s);
    // Ended, and followed by short lines: those come whole, the long one cut with its exact count.
    await appendFile(f, '\nlast\n');
    const after = await tailLines(f, 2);
    expect(after[1]).toBe('last');
    expect(after[0]).toMatch(/^… \[cut: at least \d+ bytes\] .*\rprogress 100%$/s);
    expect(await tailLines(f, 1)).toEqual(['last']);
  });

  it('a tail of complete lines has none to give, and a follow from it delivers the line cut once it ends', async () => {
    const f = join(tmp.root, 'stdout.log');
    await progressFile(f, '', LINE, '\rprogress 100%');
    const tail = await lastCompleteLines(f, 200);
    expect(tail.lines).toEqual([]);
    // Read from the end only: following starts inside the line, not at the file's start; its start was not found
    // within the scan, so the cut is a lower bound.
    expect(tail.end).toBeGreaterThan(LINE - 4 * 1024 * 1024);
    expect(tail.before).toEqual({ skipped: MAX_LINE_SCAN_BYTES, atLeast: true });
    const abort = new AbortController();
    const got: string[] = [];
    const following = followLog(f, tail.end, {
      signal: abort.signal,
      pollMs: 10,
      before: tail.before,
      onText: (t) => got.push(t),
    });
    await appendFile(f, ' done\nafter\n');
    const deadline = Date.now() + 10_000;
    while (got.join('').split('\n').length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await following;
    const lines = got.join('').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(2);
    expect(lines[0]!.length).toBeLessThan(CUT_LINE);
    expect(lines[0]).toMatch(/^… \[cut: at least \d+ bytes\] .*\rprogress 100% done$/s);
    expect(lines[1]).toBe('after');
  });

  it('a line whose start a tail finds (within MAX_LINE_SCAN_BYTES) is cut by its exact count, in a tail and in a follow', async () => {
    const f = join(tmp.root, 'stdout.log');
    const size = 10 * 1000 * 1000;
    await progressFile(f, 'before\n', size, 'END');
    const [line, ...more] = await tailLines(f, 5);
    expect(more).toEqual([]);
    expect(line).toMatch(new RegExp(`^… \\[cut: ${size + 3 - MAX_LINE_BYTES} bytes\\] .*END$`, 's'));
    expect(Buffer.byteLength(line!.slice(line!.indexOf('] ') + 2))).toBe(MAX_LINE_BYTES);
    const tail = await lastCompleteLines(f, 5);
    expect(tail.lines).toEqual([]);
    const abort = new AbortController();
    const got: string[] = [];
    const following = followLog(f, tail.end, {
      signal: abort.signal,
      pollMs: 10,
      before: tail.before,
      onText: (t) => got.push(t),
    });
    await appendFile(f, '!\n');
    const deadline = Date.now() + 10_000;
    while (!got.join('').includes('\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await following;
    expect(got.join('')).toMatch(new RegExp(`^… \\[cut: ${size + 4 - MAX_LINE_BYTES} bytes\\] .*END!\\n$`, 's'));
  });

  it('a follow from the start of such a file counts exactly what it cut', async () => {
    const f = join(tmp.root, 'stdout.log');
    await writeFile(f, '');
    const abort = new AbortController();
    const got: string[] = [];
    const following = followLog(f, 0, { signal: abort.signal, pollMs: 10, onText: (t) => got.push(t) });
    await progressFile(f, '', 10 * 1000 * 1000, 'END\n');
    const deadline = Date.now() + 10_000;
    while (!got.join('').includes('\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await following;
    const line = got.join('');
    expect(line.length).toBeLessThan(CUT_LINE);
    expect(line).toMatch(new RegExp(`^… \\[cut: ${10 * 1000 * 1000 + 3 - MAX_LINE_BYTES} bytes\\] .*END\\n$`, 's'));
  });
});

describe('LineCutter', () => {
  it('holds a line to the bound however long it grows, and passes short lines whole', () => {
    const cutter = new LineCutter(100);
    expect(cutter.push(Buffer.from('one\ntw'))).toEqual(['one']);
    expect(cutter.push(Buffer.from('o\n'))).toEqual(['two']);
    for (let i = 0; i < 1000; i++) expect(cutter.push(Buffer.from('x'.repeat(99) + '\r'))).toEqual([]);
    // 1000 × 100 bytes and `end`: its last 100 bytes are kept.
    expect(cutter.push(Buffer.from('end\nnext'))).toEqual([`… [cut: 99903 bytes] ${'x'.repeat(96)}\rend`]);
    expect(cutter.end()).toBe('next');
    expect(cutter.end()).toBeUndefined();
  });
});
