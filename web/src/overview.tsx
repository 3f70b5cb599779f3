// #/: every component, how they depend on each other, the revision, and the latest applies.
import { useEffect, useMemo } from 'preact/hooks';
import { isGroup, type ListItem } from './api-types.js';
import { Badge } from './badge.js';
import { ComponentsTable } from './components-table.js';
import type { DashboardData } from './dashboard-data.js';
import { DependencyGraph } from './dependency-graph.js';
import { HistoryList } from './history-list.js';
import { RevisionPanel } from './revision-panel.js';

const RECENT_APPLIES = 8;

function statesOf(items: ListItem[] | undefined): Map<string, string> {
  const states = new Map<string, string>();
  for (const c of items ?? []) {
    states.set(c.name, c.state);
    if (isGroup(c)) for (const m of c.members) states.set(m.name, m.state);
  }
  return states;
}

/** `4 components: 3 running, 1 crash-looping` */
function Summary({ items }: { items: ListItem[] }) {
  const units = items.flatMap((c) => (isGroup(c) ? c.members : [c]));
  const counts = new Map<string, number>();
  for (const u of units) counts.set(u.state, (counts.get(u.state) ?? 0) + 1);
  return (
    <p class="summary">
      {units.length} {units.length === 1 ? 'component' : 'components'}
      {[...counts].map(([state, n]) => (
        <span key={state} class="summary-item">
          {n} <Badge word={state} />
        </span>
      ))}
    </p>
  );
}

export function Overview({ data }: { data: DashboardData }) {
  const { components, graph, history } = data;
  const states = useMemo(() => statesOf(components.value), [components.value]);
  useEffect(() => {
    document.title = 'Overview · Keystone';
  }, []);
  const noRevision = graph.error?.code === 'KS_NO_REVISION';

  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>Overview</h1>
        {components.value && <Summary items={components.value} />}
      </div>

      <section class="panel" aria-labelledby="components-title">
        <h2 id="components-title">Components</h2>
        {!components.loaded && <p class="muted">Loading…</p>}
        {components.error && <p class="error">Could not read the components: {components.error.message}</p>}
        {components.value &&
          (components.value.length ? (
            <ComponentsTable
              id="components"
              items={components.value}
              pulls={data.pulls}
              caption="Components of this device"
            />
          ) : (
            <>
              <p class="muted">No components run on this device yet.</p>
              <table id="components" class="components" hidden />
            </>
          ))}
      </section>

      <div class="overview-grid">
        <section class="panel" aria-labelledby="graph-title">
          <h2 id="graph-title">Dependency graph</h2>
          {!graph.loaded && <p class="muted">Loading…</p>}
          {noRevision && <p class="muted">Nothing has been applied yet, so there is nothing to draw.</p>}
          {graph.error && !noRevision && <p class="error">Could not read the graph: {graph.error.message}</p>}
          {graph.value && <DependencyGraph graph={graph.value} states={states} />}
        </section>
        <RevisionPanel revision={data.revision} rejected={data.rejected} />
      </div>

      <section id="history" class="panel" aria-labelledby="history-title">
        <div class="section-head">
          <h2 id="history-title">Recent applies</h2>
          <a href="#/history">All applies</a>
        </div>
        {!history.loaded && <p class="muted">Loading…</p>}
        {history.error && <p class="error">Could not read the history: {history.error.message}</p>}
        {history.value && <HistoryList entries={history.value.entries.slice(0, RECENT_APPLIES)} />}
      </section>
    </>
  );
}
