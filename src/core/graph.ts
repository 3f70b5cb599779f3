// Dependency graph algorithms over component indices: cycles (Tarjan, iterative) and layers (Kahn). Linear in V+E.

/** `deps[i]` lists the indices component i depends on. */
export type Adjacency = ReadonlyArray<ReadonlyArray<number>>;

/**
 * Finds one concrete cycle in every strongly connected component that has one, as index paths
 * `[a, b, c]` meaning a → b → c → a. Iterative so a 10,000-long chain cannot overflow the stack.
 */
export function findCycles(deps: Adjacency): number[][] {
  const n = deps.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const sccs: number[][] = [];
  let counter = 0;
  const edgePos = new Int32Array(n);
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    const call: number[] = [root];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (call.length) {
      const v = call[call.length - 1]!;
      const edges = deps[v]!;
      if (edgePos[v]! < edges.length) {
        const w = edges[edgePos[v]!++]!;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = 1;
          call.push(w);
        } else if (onStack[w]) low[v] = Math.min(low[v]!, index[w]!);
        continue;
      }
      call.pop();
      const parent = call[call.length - 1];
      if (parent !== undefined) low[parent] = Math.min(low[parent]!, low[v]!);
      if (low[v] === index[v]) {
        const scc: number[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = 0;
          scc.push(w);
        } while (w !== v);
        if (scc.length > 1 || deps[v]!.includes(v)) sccs.push(scc);
      }
    }
  }
  return sccs.map((scc) => cycleWithin(deps, scc)).sort((a, b) => a[0]! - b[0]!);
}

/** A shortest cycle through the SCC's lowest index, found by BFS inside the SCC, so the message is short and stable. */
function cycleWithin(deps: Adjacency, scc: number[]): number[] {
  const members = new Set(scc);
  const start = Math.min(...scc);
  const prev = new Map<number, number>();
  const queue = [start];
  for (let qi = 0; qi < queue.length; qi++) {
    const v = queue[qi]!;
    for (const w of deps[v]!) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(prev.get(path[0]!)!);
        return path;
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

/**
 * Layer n holds the components whose dependencies are all in layers < n; within a layer, index
 * (plan) order. The graph must be acyclic.
 */
export function computeLayers(deps: Adjacency): number[][] {
  const n = deps.length;
  const layerOf = new Int32Array(n).fill(-1);
  const dependents: number[][] = Array.from({ length: n }, () => []);
  const pending = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const unique = new Set(deps[i]);
    pending[i] = unique.size;
    for (const d of unique) dependents[d]!.push(i);
  }
  let frontier: number[] = [];
  for (let i = 0; i < n; i++) if (pending[i] === 0) frontier.push(i);
  const layers: number[][] = [];
  while (frontier.length) {
    frontier.sort((a, b) => a - b);
    layers.push(frontier);
    const next: number[] = [];
    for (const v of frontier) {
      layerOf[v] = layers.length - 1;
      for (const w of dependents[v]!) if (--pending[w]! === 0) next.push(w);
    }
    frontier = next;
  }
  return layers;
}
