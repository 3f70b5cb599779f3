// The one bound on a line the agent keeps (issue 28, finding 7): cuts say how much they cut, keep the end a reader
// needs, and never split a character.
import { describe, expect, it } from 'vitest';
import { cutLine, cutMarker, keepEnd, MAX_LINE_BYTES } from '../../src/core/line-bound.js';

const cutCount = (text: string) => Number(/\[cut: (?:at least )?(\d+) bytes\]/.exec(text)?.[1]);

describe('cutLine', () => {
  it('leaves a line within the bound as it is', () => {
    expect(cutLine('install script of api exited with 1: no space left')).toBe(
      'install script of api exited with 1: no space left',
    );
    const full = 'y'.repeat(MAX_LINE_BYTES);
    expect(cutLine(full)).toBe(full);
  });

  it('cuts a longer one to the bound, marker included: its head, the marker with the count, its end', () => {
    const text = `install script of api exited with 1: ${'x'.repeat(1_000_000)} the last words`;
    const cut = cutLine(text);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(cut.startsWith('install script of api exited with 1: xxx')).toBe(true);
    expect(cut.endsWith('x the last words')).toBe(true);
    // What is kept and what the marker says was cut make the whole.
    const kept = cut.replace(/ … \[cut: \d+ bytes\] /, '');
    expect(kept.length + cutCount(cut)).toBe(text.length);
  });

  it('never splits a character', () => {
    const cut = cutLine('é'.repeat(100_000), 1000);
    expect(cut).not.toContain('\ufffd');
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1000);
  });
});

describe('keepEnd', () => {
  it('keeps the end of a long line after a marker, and says when the line began before what was read', () => {
    const bytes = Buffer.from(`${'a'.repeat(50_000)}END`);
    const line = keepEnd(bytes);
    expect(line.startsWith(cutMarker(50_003 - MAX_LINE_BYTES))).toBe(true);
    expect(line.endsWith('aEND')).toBe(true);
    expect(keepEnd(bytes, MAX_LINE_BYTES, 0, true)).toMatch(/^… \[cut: at least 33619 bytes\] a+END$/);
    expect(keepEnd(Buffer.from('short'))).toBe('short');
    expect(keepEnd(Buffer.from('short'), MAX_LINE_BYTES, 7)).toBe(`${cutMarker(7)}short`);
    expect(keepEnd(Buffer.from('€'.repeat(10)), 10)).not.toContain('\ufffd');
  });
});
