// The resolved graph as text, JSON, Mermaid and Graphviz dot. Edges point from a dependency to its dependent, as in the worked example.
import type { DesiredState } from '../../core/desired-state.js';

export type GraphFormat = 'text' | 'json' | 'mermaid' | 'dot';
export const GRAPH_FORMATS: readonly GraphFormat[] = ['text', 'json', 'mermaid', 'dot'];

interface Edge {
  from: string;
  to: string;
  type: 'hard' | 'ordering';
}

function edges(s: DesiredState): Edge[] {
  return s.components.flatMap((c) => c.dependencies.map((d) => ({ from: d.component, to: c.name, type: d.type })));
}

export function graphJson(s: DesiredState): object {
  const layerOf = new Map<string, number>();
  s.layers.forEach((l, i) => l.forEach((n) => layerOf.set(n, i)));
  return {
    plan: s.planFile,
    layers: s.layers,
    startOrder: s.startOrder,
    stopOrder: [...s.startOrder].reverse(),
    components: s.components.map((c) => ({
      name: c.name,
      recipe: c.recipePath,
      id: c.recipe.metadata.name,
      version: c.recipe.metadata.version,
      type: c.recipe.lifecycle.run.type,
      layer: layerOf.get(c.name),
      hash: c.hash,
      dependencies: c.dependencies,
      ...(c.group !== undefined && { group: c.group, member: c.member }),
    })),
    ...(s.groups?.length && {
      groups: s.groups.map((g) => ({
        name: g.name,
        kind: g.kind,
        version: g.version,
        recipe: g.recipePath,
        members: g.members,
      })),
    }),
  };
}

export function renderGraph(s: DesiredState, format: GraphFormat): string {
  switch (format) {
    case 'json':
      return JSON.stringify(graphJson(s), null, 2) + '\n';
    case 'text': {
      const lines = s.layers.map((l, i) => `layer ${i}: ${l.join(' ')}`);
      lines.push(`start order: ${s.startOrder.join(' ')}`, `stop order: ${[...s.startOrder].reverse().join(' ')}`);
      const es = edges(s);
      if (es.length) lines.push('dependencies:', ...es.map((e) => `  ${e.to} → ${e.from} (${e.type})`));
      return lines.join('\n') + '\n';
    }
    case 'mermaid': {
      const id = nodeIds(s);
      const lines = ['flowchart TB'];
      const node = (n: string) => `${id.get(n)}["${n.replace(/"/g, '#quot;')}"]`;
      const grouped = new Set((s.groups ?? []).flatMap((g) => g.members));
      for (const c of s.components) if (!grouped.has(c.name)) lines.push(`    ${node(c.name)}`);
      // A composite's members inside one box, named after it.
      (s.groups ?? []).forEach((g, i) =>
        lines.push(
          `    subgraph group${i}["${g.name} (${g.kind})"]`,
          ...g.members.map((m) => `        ${node(m)}`),
          '    end',
        ),
      );
      for (const e of edges(s))
        lines.push(
          e.type === 'hard'
            ? `    ${id.get(e.from)} -- "hard" --> ${id.get(e.to)}`
            : `    ${id.get(e.from)} -. "ordering" .-> ${id.get(e.to)}`,
        );
      return lines.join('\n') + '\n';
    }
    case 'dot': {
      const q = (n: string) => JSON.stringify(n);
      const lines = ['digraph keystone {', '  rankdir=TB;', '  node [shape=box];'];
      s.layers.forEach((l) => lines.push(`  { rank=same; ${l.map(q).join('; ')}; }`));
      (s.groups ?? []).forEach((g, i) =>
        lines.push(
          `  subgraph cluster_${i} { label=${q(`${g.name} (${g.kind})`)}; ${g.members.map(q).join('; ')}${g.members.length ? ';' : ''} }`,
        ),
      );
      for (const e of edges(s))
        lines.push(
          `  ${q(e.from)} -> ${q(e.to)} [label=${q(e.type)}${e.type === 'ordering' ? ', style=dashed' : ''}];`,
        );
      lines.push('}');
      return lines.join('\n') + '\n';
    }
  }
}

/** Mermaid ids must be plain; component names may hold dots and dashes. */
function nodeIds(s: DesiredState): Map<string, string> {
  return new Map(s.components.map((c, i) => [c.name, `c${i}_${c.name.replace(/[^A-Za-z0-9_]/g, '_')}`]));
}
