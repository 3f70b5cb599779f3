// Layers (Kahn) and cycles (iterative Tarjan) over component indices: deps[i] lists what i depends on.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeLayers, findCycles, type Adjacency } from '../../src/core/graph.js';

describe('computeLayers', () => {
  it.each<{ name: string; deps: Adjacency; layers: number[][] }>([
    { name: 'no components', deps: [], layers: [] },
    { name: 'independent components share layer 0, in plan order', deps: [[], [], []], layers: [[0, 1, 2]] },
    { name: 'a chain', deps: [[], [0], [1]], layers: [[0], [1], [2]] },
    { name: 'the four-component stack', deps: [[], [0], [0], [1]], layers: [[0], [1, 2], [3]] },
    { name: 'a diamond', deps: [[], [0], [0], [1, 2]], layers: [[0], [1, 2], [3]] },
    {
      name: 'plan order within a layer, whatever the index of the dependency',
      deps: [[2], [], [], [1]],
      layers: [
        [1, 2],
        [0, 3],
      ],
    },
    {
      name: 'a layer is one past the deepest dependency, not the shallowest',
      deps: [[], [0], [1], [0, 2]],
      layers: [[0], [1], [2], [3]],
    },
    { name: 'a dependency listed twice counts once', deps: [[], [0, 0]], layers: [[0], [1]] },
  ])('$name', ({ deps, layers }) => {
    expect(computeLayers(deps)).toEqual(layers);
  });

  it('leaves out what is on or behind a cycle (resolution rejects cycles first)', () => {
    expect(computeLayers([[], [2], [1], [1]])).toEqual([[0]]);
  });

  it('handles a 10,000-long chain', () => {
    const n = 10_000;
    const deps = Array.from({ length: n }, (_, i) => (i === 0 ? [] : [i - 1]));
    const layers = computeLayers(deps);
    expect(layers).toHaveLength(n);
    expect(layers.every((l, i) => l.length === 1 && l[0] === i)).toBe(true);
  });

  it('on random DAGs: every component once, each after all its dependencies and in its lowest such layer', () => {
    const dag = fc.integer({ min: 1, max: 80 }).chain((n) =>
      fc.array(fc.array(fc.nat(), { maxLength: 4 }), { minLength: n, maxLength: n }).map((raw) =>
        // Depend on later indices only, so plan order and dependency order disagree.
        raw.map((ds, i) => (i === n - 1 ? [] : ds.map((d) => i + 1 + (d % (n - 1 - i))))),
      ),
    );
    fc.assert(
      fc.property(dag, (deps) => {
        const layers = computeLayers(deps);
        const layerOf = new Map<number, number>();
        layers.forEach((l, li) => l.forEach((v) => layerOf.set(v, li)));
        expect([...layerOf.keys()].sort((a, b) => a - b)).toEqual(deps.map((_, i) => i));
        for (const l of layers) expect(l).toEqual([...l].sort((a, b) => a - b));
        deps.forEach((ds, i) => {
          const expected = ds.length === 0 ? 0 : Math.max(...ds.map((d) => layerOf.get(d)!)) + 1;
          expect(layerOf.get(i)).toBe(expected);
        });
        expect(findCycles(deps)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});

describe('findCycles', () => {
  it.each<{ name: string; deps: Adjacency; cycles: number[][] }>([
    { name: 'none in a DAG', deps: [[], [0], [0], [1, 2]], cycles: [] },
    { name: 'none in an empty graph', deps: [], cycles: [] },
    { name: 'a self-loop', deps: [[0]], cycles: [[0]] },
    { name: 'a self-loop beside healthy components', deps: [[], [1, 0], [1]], cycles: [[1]] },
    { name: 'a 2-cycle', deps: [[1], [0]], cycles: [[0, 1]] },
    { name: 'a 3-cycle', deps: [[1], [2], [0]], cycles: [[0, 1, 2]] },
    { name: 'a 3-cycle entered from a tail, which is not part of it', deps: [[1], [2], [3], [1]], cycles: [[1, 2, 3]] },
    { name: 'a 3-cycle listed from its lowest index', deps: [[], [3], [1], [2]], cycles: [[1, 3, 2]] },
    {
      name: 'two separate cycles, ordered by their first index',
      deps: [[], [4], [3], [2], [1]],
      cycles: [
        [1, 4],
        [2, 3],
      ],
    },
    { name: 'the shortest cycle through the lowest index of a tangle', deps: [[1], [2, 0], [0]], cycles: [[0, 1]] },
  ])('$name', ({ deps, cycles }) => {
    expect(findCycles(deps)).toEqual(cycles);
  });

  it('every reported cycle is a real cycle', () => {
    const graph = fc
      .integer({ min: 1, max: 40 })
      .chain((n) => fc.array(fc.array(fc.nat({ max: n - 1 }), { maxLength: 3 }), { minLength: n, maxLength: n }));
    fc.assert(
      fc.property(graph, (deps) => {
        const cycles = findCycles(deps);
        for (const c of cycles) {
          expect(new Set(c).size).toBe(c.length);
          c.forEach((v, i) => expect(deps[v]).toContain(c[(i + 1) % c.length]));
          expect(c[0]).toBe(Math.min(...c));
        }
        // Acyclic exactly when layering reaches every component.
        expect(cycles.length === 0).toBe(computeLayers(deps).flat().length === deps.length);
      }),
      { numRuns: 200 },
    );
  });

  it('walks a 10,000-long chain without overflowing the stack', () => {
    const n = 10_000;
    const chain = Array.from({ length: n }, (_, i) => (i === 0 ? [] : [i - 1]));
    expect(findCycles(chain)).toEqual([]);
    // The same chain in the other direction (deepest recursion from root 0), closed into one cycle.
    const ring = Array.from({ length: n }, (_, i) => [(i + 1) % n]);
    const cycles = findCycles(ring);
    expect(cycles).toHaveLength(1);
    expect(cycles[0]).toEqual(Array.from({ length: n }, (_, i) => i));
  });
});
