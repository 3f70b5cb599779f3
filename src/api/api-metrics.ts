// GET /metrics in Prometheus text format, on metrics of this server's own: two servers in one process (tests, or an
// agent restarted in-process) never share or double-count series.
// Gauges read the store when scraped; counters and histograms count agent events from the moment the server exists.
import type { AgentEventMap } from '../agent/agent.js';
import { COMPONENT_STATES } from '../store/state-store.js';
import type { ApiAgent } from './api-deps.js';
import { addProcessMetrics } from './process-metrics.js';
import { Counter, Gauge, Histogram, MetricSet, PROMETHEUS_CONTENT_TYPE } from './prometheus-text.js';

export { EVENT_LOOP_SAMPLE_MS } from './process-metrics.js';

export interface ApiMetrics {
  contentType: string;
  /** The exposition, collected now. */
  text(): string;
  /** Stops counting agent events and sampling the process. */
  close(): void;
}

export function createApiMetrics(agent: ApiAgent): ApiMetrics {
  const metrics = new MetricSet();
  const { store } = agent;

  const revisionInfo: Gauge = metrics.add(
    new Gauge({
      name: 'keystone_revision_info',
      help: 'The revision applied on this device (always 1); unsigned="true" when it was applied without a signature check.',
      labelled: true,
      collect() {
        revisionInfo.reset();
        const r = store.appliedRevision();
        if (r) revisionInfo.set({ revision: r.id, unsigned: String(r.unsigned) }, 1);
      },
    }),
  );
  const applyDuration = metrics.add(
    new Histogram({
      name: 'keystone_apply_duration_seconds',
      help: 'Time from a revision reaching the agent to its apply finishing: verification, loading, stops and health-gated starts.',
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    }),
  );
  const rejected = metrics.add(
    new Counter({
      name: 'keystone_revisions_rejected_total',
      help: 'Revisions refused before they were applied (invalid, unsigned, untrusted or replayed).',
    }),
  );
  const componentState: Gauge = metrics.add(
    new Gauge({
      name: 'keystone_component_state',
      help: 'The state of each component: 1 for its current state, 0 for the others.',
      labelled: true,
      collect() {
        // Reset first: a component removed by a revision must disappear, not keep its last state.
        componentState.reset();
        for (const rec of store.components())
          for (const state of COMPONENT_STATES)
            componentState.set({ component: rec.name, state }, rec.state === state ? 1 : 0);
      },
    }),
  );
  const restarts: Counter = metrics.add(
    new Counter({
      name: 'keystone_component_restarts_total',
      help: 'Restarts by the supervisor after a component exited, counted since the agent started.',
      labelled: true,
      // Every known component has a series from the start, so rate() sees its first restart.
      collect: () => store.components().forEach((rec) => restarts.inc({ component: rec.name }, 0)),
    }),
  );
  const crashLoops: Counter = metrics.add(
    new Counter({
      name: 'keystone_crash_loops_total',
      help: 'Times a component was held as crash-looping (restarted too often without a healthy spell), counted since the agent started.',
      labelled: true,
      collect: () => store.components().forEach((rec) => crashLoops.inc({ component: rec.name }, 0)),
    }),
  );
  const probeLatency = metrics.add(
    new Histogram({
      name: 'keystone_probe_latency_seconds',
      help: 'Latency of component health probes, by result.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
  );
  // The agent's own process: memory and event-loop lag matter on a small device.
  const stopSampling = addProcessMetrics(metrics);

  const onRevision = (e: AgentEventMap['revision'][0]) => {
    if (e.outcome === 'rejected') rejected.inc();
    else applyDuration.observe({ outcome: e.outcome }, e.durationMs / 1000);
  };
  const onRestart = (e: AgentEventMap['restart'][0]) => restarts.inc({ component: e.component });
  const onState = (e: AgentEventMap['state'][0]) => {
    if (e.state === 'crash-looping') crashLoops.inc({ component: e.component });
  };
  const onProbe = (e: AgentEventMap['probe'][0]) =>
    probeLatency.observe({ component: e.component, result: e.ok ? 'ok' : 'failed' }, e.latencyMs / 1000);
  const { events } = agent;
  events.on('revision', onRevision);
  events.on('restart', onRestart);
  events.on('state', onState);
  events.on('probe', onProbe);

  return {
    contentType: PROMETHEUS_CONTENT_TYPE,
    text: () => metrics.text(),
    close() {
      events.off('revision', onRevision);
      events.off('restart', onRestart);
      events.off('state', onState);
      events.off('probe', onProbe);
      stopSampling();
    },
  };
}
