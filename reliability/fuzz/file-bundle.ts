// Several repository files as one input, so that a whole revision (a plan, its recipes, fleet.toml) is one corpus
// file and mutations reach every file of it: `=== path` lines start each file, the rest is its content.
import { text } from './fuzz-target.js';

const HEADER = /^=== (.*)$/gm;

export function decodeBundle(input: Uint8Array): Map<string, Uint8Array> {
  const s = Buffer.from(input).toString('latin1');
  const files = new Map<string, Uint8Array>();
  const heads = [...s.matchAll(HEADER)];
  heads.forEach((m, i) => {
    const start = m.index + m[0].length + 1;
    const end = i + 1 < heads.length ? heads[i + 1]!.index : s.length;
    files.set(m[1]!, new Uint8Array(Buffer.from(s.slice(Math.min(start, end), end), 'latin1')));
  });
  return files;
}

export function encodeBundle(files: ReadonlyMap<string, string>): Uint8Array {
  return text([...files].map(([p, c]) => `=== ${p}\n${c}`).join(''));
}
