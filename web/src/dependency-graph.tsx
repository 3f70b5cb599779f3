// The start layers as a picture: what depends on what, and each component's state at a glance. The table holds the
// same components as links; the picture is for the eye, so it is one image to assistive technology, described in words.
import { useMemo } from 'preact/hooks';
import type { GraphView as Graph } from '../../src/api/views.js';
import { toneOf } from './badge.js';
import { layoutGraph } from './graph-layout.js';
import { useMediaQuery } from './media-query.js';
import { componentHref } from './route.js';

interface Props {
  graph: Graph;
  states: ReadonlyMap<string, string>;
}

function describe(graph: Graph): string {
  const layers = graph.layers.filter((l) => l.length).map((l, i) => `${i === 0 ? 'First' : 'Then'}: ${l.join(', ')}.`);
  const deps = graph.edges.map((e) => `${e.from} depends on ${e.to} (${e.type})`);
  return `Start order by layer. ${layers.join(' ')}${deps.length ? ` ${deps.join('; ')}.` : ''}`;
}

export function DependencyGraph({ graph, states }: Props) {
  const narrow = useMediaQuery('(max-width: 640px)');
  const layout = useMemo(() => layoutGraph(graph, narrow), [graph, narrow]);
  const description = useMemo(() => describe(graph), [graph]);
  const kinds = new Set(graph.edges.map((e) => e.type));

  return (
    <figure class="graph">
      <div class="graph-canvas">
        <svg
          id="graph"
          role="img"
          aria-label="dependency graph"
          aria-describedby="graph-description"
          viewBox={`0 0 ${layout.width} ${layout.height}`}
          width={layout.width}
          height={layout.height}
          class={narrow ? 'vertical' : 'horizontal'}
        >
          <defs>
            {['hard', 'ordering'].map((kind) => (
              <marker
                key={kind}
                id={`arrow-${kind}`}
                viewBox="0 0 10 10"
                refX="9.5"
                refY="5"
                markerWidth="7"
                markerHeight="7"
                orient="auto"
              >
                <path d="M0 0L10 5L0 10z" class={`arrowhead arrowhead-${kind}`} />
              </marker>
            ))}
          </defs>
          {layout.groups.map((g) => (
            <g class="group" key={`${g.name}@${g.x},${g.y}`}>
              <rect x={g.x} y={g.y} width={g.w} height={g.h} rx="8" />
              <text x={g.x + 8} y={g.y + 13}>
                {g.label}
              </text>
            </g>
          ))}
          {layout.edges.map((e) => (
            <path
              key={`${e.from}>${e.to}`}
              class={`edge edge-${e.kind === 'hard' ? 'hard' : 'ordering'}`}
              data-from={e.from}
              data-to={e.to}
              data-kind={e.kind}
              d={e.d}
              marker-end={`url(#arrow-${e.kind === 'hard' ? 'hard' : 'ordering'})`}
            />
          ))}
          {layout.nodes.map((n) => {
            const state = states.get(n.name) ?? 'unknown';
            return (
              <g
                key={n.name}
                class={`node tone-${toneOf(state)}`}
                data-component={n.name}
                data-state={state}
                onClick={() => (location.hash = componentHref(n.name))}
              >
                <title>{`${n.name}: ${state}`}</title>
                <rect x={n.x} y={n.y} width={n.w} height={n.h} rx="6" />
                <text class="node-name" x={n.x + 10} y={n.y + 19}>
                  {n.label}
                </text>
                <text class="node-state" x={n.x + 10} y={n.y + 36}>
                  {state}
                </text>
              </g>
            );
          })}
        </svg>
      </div>
      <p id="graph-description" class="visually-hidden">
        {description}
      </p>
      <figcaption class="legend">
        <span class="legend-item">
          <svg viewBox="0 0 40 10" width="40" height="10" aria-hidden="true">
            <path class="legend-line line-hard" d="M0 5H36" marker-end="url(#arrow-hard)" />
          </svg>
          hard dependency (restarts with it)
        </span>
        <span class={`legend-item${kinds.has('ordering') ? '' : ' legend-absent'}`}>
          <svg viewBox="0 0 40 10" width="40" height="10" aria-hidden="true">
            <path class="legend-line line-ordering" d="M0 5H36" marker-end="url(#arrow-ordering)" />
          </svg>
          ordering (starts after it)
        </span>
        <span class="legend-item muted">
          Arrows point to the dependency; {narrow ? 'rows start top to bottom' : 'columns start left to right'}.
        </span>
      </figcaption>
    </figure>
  );
}
