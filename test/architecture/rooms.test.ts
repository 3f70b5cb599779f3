// The rooms of src/ keep their shape (README's room map, docs/architecture.md): each room imports only the rooms below
// it in lint/rooms.mjs — dynamic import() and type imports too, which ESLint's rule does not see — no import circle
// anywhere, type-only imports included (a type circle still ties the files together, and madge counts it), and no
// file of src/ over 300 lines (issue 34). Each regressed once without anyone noticing; this test says where.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { allowedFrom, APART, ROOMS } from '../../lint/rooms.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');
const MAX_LINES = 300;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(f) && !f.endsWith('.d.ts') ? [p] : [];
  });
}

/** `./x.js` from `from` as the file it names, or undefined for a package or a file outside src/. */
function resolveSpecifier(from: string, spec: string, known: ReadonlySet<string>): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec).replace(/\.(m?js|jsx)$/, '');
  return [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')].find((p) => known.has(p));
}

/**
 * Every file of src/ and the files it imports. ts.preProcessFile lists every module specifier the way the compiler
 * reads them: `import`, `import type`, `export … from`, `export type … from`, `import()` and `require()`.
 */
function importGraph(): Map<string, string[]> {
  const files = sourceFiles(SRC);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(f, 'utf8'), true, true);
    const deps = importedFiles
      .map((i) => resolveSpecifier(f, i.fileName, known))
      .filter((p): p is string => p !== undefined);
    graph.set(f, [...new Set(deps)]);
  }
  return graph;
}

/** The strongly connected components with a circle in them (Tarjan): each holds every file of one tangle. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || graph.get(v)?.includes(v)) out.push(scc);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** One concrete circle through `start` inside its component (shortest, by breadth-first search), for the message. */
function circleThrough(
  start: string,
  scc: ReadonlySet<string>,
  graph: ReadonlyMap<string, readonly string[]>,
): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!scc.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

const name = (p: string) => relative(ROOT, p);

/** The room of a file of src/: its first folder, or its own name for a file directly in src/. */
const roomOf = (p: string) => relative(SRC, p).split('/')[0]!;

describe('the rooms of src/', () => {
  it('are every folder of src/, each named in lint/rooms.mjs', () => {
    const rooms = readdirSync(SRC).filter((f) => statSync(join(SRC, f)).isDirectory() || f.endsWith('.ts'));
    expect(rooms.filter((r) => !ROOMS.includes(r) && !APART.includes(r))).toEqual([]);
    expect([...ROOMS, ...APART].filter((r) => !rooms.includes(r))).toEqual([]);
  });

  it('import only from the rooms below them, dynamic and type imports included', () => {
    const wrong: string[] = [];
    for (const [file, deps] of importGraph()) {
      const from = roomOf(file);
      for (const dep of deps) {
        const to = roomOf(dep);
        if (to !== from && !allowedFrom(from).includes(to))
          wrong.push(
            `${name(file)} imports ${name(dep)} (${from} may import: ${allowedFrom(from).join(', ') || 'nothing'})`,
          );
      }
    }
    if (wrong.length)
      console.error(`imports across rooms that lint/rooms.mjs does not allow:\n  ${wrong.join('\n  ')}`);
    expect(wrong).toEqual([]);
  });
});

describe('every file of src/', () => {
  it(`is at most ${MAX_LINES} lines`, () => {
    const long = sourceFiles(SRC)
      .map((f) => ({ file: name(f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_LINES)
      .map(
        (f) =>
          `${f.file}: ${f.lines} lines (split it by purpose: move a coherent part into a file of its own; see README's room map)`,
      );
    if (long.length) console.error(`src/ files over ${MAX_LINES} lines:\n  ${long.join('\n  ')}`);
    expect(long).toEqual([]);
  });
});

describe('the agent spine (src/agent/)', () => {
  it('has no import circle, type-only imports included', () => {
    const graph = importGraph();
    const found = circles(graph).map((scc) => {
      const files = new Set(scc);
      const start = [...scc].sort()[0]!;
      return `${circleThrough(start, files, graph).map(name).join(' -> ')}   (tangle: ${scc.map(name).sort().join(', ')})`;
    });
    if (found.length) console.error(`import circles through src/agent/:\n  ${found.join('\n  ')}`);
    expect(found).toEqual([]);
  });

  it('sees type-only imports and re-exports (the walk itself)', () => {
    const { importedFiles } = ts.preProcessFile(
      "import type { A } from './a.js';\nexport type { B } from './b.js';\nexport * from './c.js';\nconst d = await import('./d.js');\n",
      true,
      true,
    );
    expect(importedFiles.map((i) => i.fileName)).toEqual(['./a.js', './b.js', './c.js', './d.js']);
  });
});
