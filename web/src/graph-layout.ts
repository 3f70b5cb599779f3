// Places the dependency graph by its start layers: one column (or, on a narrow screen, one row) per layer, layer 0
// first, nodes ordered in each layer near what they depend on so that edges cross less.
import type { GraphView as Graph } from '../../src/api/views.js';

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}
export interface PlacedNode extends Box {
  name: string;
  label: string;
}
export interface PlacedEdge {
  from: string;
  to: string;
  kind: string;
  d: string;
}
export interface PlacedGroup extends Box {
  name: string;
  label: string;
}
export interface GraphLayout {
  width: number;
  height: number;
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  groups: PlacedGroup[];
}

const CHAR_W = 7.4;
const NODE_H = 46;
const PAD = 8;
const MARGIN = 12;
/** Room above a group's members for its name. */
const GROUP_LABEL = 18;

export function layoutGraph(graph: Graph, vertical: boolean): GraphLayout {
  const layers = graph.layers.filter((l) => l.length > 0);
  const longest = Math.max(8, ...layers.flat().map((n) => n.length));
  const nodeW = Math.round(Math.min(vertical ? 150 : 210, Math.max(vertical ? 96 : 120, longest * CHAR_W + 24)));
  const maxChars = Math.floor((nodeW - 20) / CHAR_W);
  const layerGap = vertical ? 54 : 84;
  const nodeGap = vertical ? 12 : 16;

  const groupOf = new Map<string, string>();
  for (const g of graph.groups ?? []) for (const m of g.members) groupOf.set(m, g.name);
  const depsOf = new Map<string, string[]>();
  for (const e of graph.edges) depsOf.set(e.from, [...(depsOf.get(e.from) ?? []), e.to]);

  // Order each layer by where its dependencies sit (barycentre), group members kept together.
  const rank = new Map<string, number>();
  const ordered = layers.map((layer, li) => {
    const key = (n: string) => {
      const deps = (depsOf.get(n) ?? []).filter((d) => rank.has(d));
      return deps.length && li > 0 ? deps.reduce((s, d) => s + rank.get(d)!, 0) / deps.length : layer.indexOf(n);
    };
    const groupKey = new Map<string, number>();
    for (const n of layer) {
      const g = groupOf.get(n);
      if (g && !groupKey.has(g)) {
        const members = layer.filter((m) => groupOf.get(m) === g);
        groupKey.set(g, members.reduce((s, m) => s + key(m), 0) / members.length);
      }
    }
    const sorted = [...layer].sort((a, b) => {
      const ga = groupOf.get(a);
      const gb = groupOf.get(b);
      const ka = ga ? groupKey.get(ga)! : key(a);
      const kb = gb ? groupKey.get(gb)! : key(b);
      if (ka !== kb) return ka - kb;
      if (ga !== gb) return (ga ?? a).localeCompare(gb ?? b);
      return layer.indexOf(a) - layer.indexOf(b);
    });
    sorted.forEach((n, i) => rank.set(n, layer.length > 1 ? i / (layer.length - 1) : 0.5));
    return sorted;
  });

  // Cross-axis offsets within each layer, with room around each run of a group's members.
  const layerHasGroup = ordered.map((l) => l.some((n) => groupOf.has(n)));
  const crossSize = vertical ? nodeW : NODE_H;
  const offsets = ordered.map((layer) => {
    const out: number[] = [];
    let pos = 0;
    layer.forEach((n, i) => {
      const g = groupOf.get(n);
      const prev = i > 0 ? groupOf.get(layer[i - 1]!) : undefined;
      if (i > 0) pos += nodeGap;
      if (g && g !== prev) pos += PAD + (vertical ? 0 : GROUP_LABEL);
      if (i > 0 && prev && prev !== g) pos += PAD;
      out.push(pos);
      pos += crossSize;
    });
    const last = layer.at(-1);
    return { out, extent: pos + (last && groupOf.has(last) ? PAD : 0) };
  });
  const crossExtent = Math.max(...offsets.map((o) => o.extent), 0);

  const mainSize = vertical ? NODE_H : nodeW;
  const mainExtra = (li: number) => (vertical && layerHasGroup[li] ? GROUP_LABEL + PAD : 0);
  const nodes: PlacedNode[] = [];
  const byName = new Map<string, PlacedNode>();
  let main = MARGIN;
  ordered.forEach((layer, li) => {
    main += mainExtra(li);
    const { out, extent } = offsets[li]!;
    const shift = MARGIN + (crossExtent - extent) / 2;
    layer.forEach((name, i) => {
      const cross = shift + out[i]!;
      const node: PlacedNode = {
        name,
        label: name.length > maxChars ? `${name.slice(0, maxChars - 1)}…` : name,
        x: vertical ? cross : main,
        y: vertical ? main : cross,
        w: nodeW,
        h: NODE_H,
      };
      nodes.push(node);
      byName.set(name, node);
    });
    main += mainSize + (vertical && layerHasGroup[li] ? PAD : 0) + layerGap;
  });
  const width = vertical ? crossExtent + 2 * MARGIN : main - layerGap + MARGIN;
  const height = vertical ? main - layerGap + MARGIN : crossExtent + 2 * MARGIN;

  const groups: PlacedGroup[] = [];
  for (const g of graph.groups ?? []) {
    // One box per layer the group spans: members in different layers cannot share a box without covering others.
    ordered.forEach((layer) => {
      const members = layer.filter((n) => groupOf.get(n) === g.name).map((n) => byName.get(n)!);
      if (members.length === 0) return;
      const x = Math.min(...members.map((m) => m.x)) - PAD;
      const y = Math.min(...members.map((m) => m.y)) - PAD - GROUP_LABEL;
      groups.push({
        name: g.name,
        label: `${g.name} (${g.kind})`,
        x,
        y,
        w: Math.max(...members.map((m) => m.x + m.w)) + PAD - x,
        h: Math.max(...members.map((m) => m.y + m.h)) + PAD - y,
      });
    });
  }

  const edges: PlacedEdge[] = [];
  for (const e of graph.edges) {
    const a = byName.get(e.from);
    const b = byName.get(e.to);
    if (!a || !b) continue;
    edges.push({ from: e.from, to: e.to, kind: e.type, d: vertical ? verticalPath(a, b) : horizontalPath(a, b) });
  }
  return { width: Math.ceil(width), height: Math.ceil(height), nodes, edges, groups };
}

/** From the dependent's near side to the dependency's far side; a loop on the outside when both share a layer. */
function horizontalPath(a: Box, b: Box): string {
  const ay = a.y + a.h / 2;
  const by = b.y + b.h / 2;
  if (b.x + b.w < a.x) {
    const x1 = a.x;
    const x2 = b.x + b.w;
    const c = Math.max(24, (x1 - x2) / 2);
    return `M${x1} ${ay}C${x1 - c} ${ay} ${x2 + c} ${by} ${x2} ${by}`;
  }
  const x = Math.max(a.x + a.w, b.x + b.w);
  return `M${a.x + a.w} ${ay}C${x + 36} ${ay} ${x + 36} ${by} ${b.x + b.w} ${by}`;
}

function verticalPath(a: Box, b: Box): string {
  const ax = a.x + a.w / 2;
  const bx = b.x + b.w / 2;
  if (b.y + b.h < a.y) {
    const y1 = a.y;
    const y2 = b.y + b.h;
    const c = Math.max(18, (y1 - y2) / 2);
    return `M${ax} ${y1}C${ax} ${y1 - c} ${bx} ${y2 + c} ${bx} ${y2}`;
  }
  const y = Math.max(a.y + a.h, b.y + b.h);
  return `M${ax} ${a.y + a.h}C${ax} ${y + 30} ${bx} ${y + 30} ${bx} ${b.y + b.h}`;
}
