// GET /metrics in Prometheus text format (prom-client), on a registry of this server's own: two servers in one
// process (tests, or an agent restarted in-process) never share or double-register series.
// Gauges read the store when scraped; counters and histograms count agent events from the moment the server exists.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AgentEventMap } from '../agent/agent.js';
import { COMPONENT_STATES } from '../store/state-store.js';
import type { ApiAgent } from './api-deps.js';

/**
 * How often the event-loop delay is sampled: every 100 ms, not prom-client's 10 ms, whose sampling timer alone woke an
 * idle agent ~190 times a second (most of its idle CPU, issue 16); ten samples a second still give a p99 over an
 * apply. Node's histogram records each sampling interval whole, so nodejs_eventloop_lag_* read this much over the
 * delay itself (0.1 s; with prom-client's default it was 0.01 s).
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

export interface ApiMetrics {
  registry: Registry;
  /** Stops counting agent events. */
  close(): void;
}

export function createApiMetrics(agent: ApiAgent): ApiMetrics {
  const registry = new Registry();
  const registers = [registry];
  const { store } = agent;

  new Gauge({
    name: 'keystone_revision_info',
    help: 'The revision applied on this device (always 1); unsigned="true" when it was applied without a signature check.',
    labelNames: ['revision', 'unsigned'] as const,
    registers,
    collect() {
      this.reset();
      const r = store.appliedRevision();
      if (r) this.set({ revision: r.id, unsigned: String(r.unsigned) }, 1);
    },
  });
  const applyDuration = new Histogram({
    name: 'keystone_apply_duration_seconds',
    help: 'Time from a revision reaching the agent to its apply finishing: verification, loading, stops and health-gated starts.',
    labelNames: ['outcome'] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers,
  });
  const rejected = new Counter({
    name: 'keystone_revisions_rejected_total',
    help: 'Revisions refused before they were applied (invalid, unsigned, untrusted or replayed).',
    registers,
  });
  new Gauge({
    name: 'keystone_component_state',
    help: 'The state of each component: 1 for its current state, 0 for the others.',
    labelNames: ['component', 'state'] as const,
    registers,
    collect() {
      // Reset first: a component removed by a revision must disappear, not keep its last state.
      this.reset();
      for (const rec of store.components()) for (const state of COMPONENT_STATES) this.set({ component: rec.name, state }, rec.state === state ? 1 : 0);
    },
  });
  const restarts = new Counter({
    name: 'keystone_component_restarts_total',
    help: 'Restarts by the supervisor after a component exited, counted since the agent started.',
    labelNames: ['component'] as const,
    registers,
    collect() {
      // Every known component has a series from the start, so rate() sees its first restart.
      for (const rec of store.components()) this.inc({ component: rec.name }, 0);
    },
  });
  const crashLoops = new Counter({
    name: 'keystone_crash_loops_total',
    help: 'Times a component was held as crash-looping (restarted too often without a healthy spell), counted since the agent started.',
    labelNames: ['component'] as const,
    registers,
    collect() {
      for (const rec of store.components()) this.inc({ component: rec.name }, 0);
    },
  });
  const probeLatency = new Histogram({
    name: 'keystone_probe_latency_seconds',
    help: 'Latency of component health probes, by result.',
    labelNames: ['component', 'result'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  // The agent's own process: memory and event-loop lag matter on a small device.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  // Gauges named *_total break the Prometheus naming rules (promtool check metrics refuses them); the per-type gauges
  // without the suffix carry the same numbers.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);

  const onRevision = (e: AgentEventMap['revision'][0]) => {
    if (e.outcome === 'rejected') rejected.inc();
    else applyDuration.observe({ outcome: e.outcome }, e.durationMs / 1000);
  };
  const onRestart = (e: AgentEventMap['restart'][0]) => restarts.inc({ component: e.component });
  const onState = (e: AgentEventMap['state'][0]) => {
    if (e.state === 'crash-looping') crashLoops.inc({ component: e.component });
  };
  const onProbe = (e: AgentEventMap['probe'][0]) => probeLatency.observe({ component: e.component, result: e.ok ? 'ok' : 'failed' }, e.latencyMs / 1000);
  const { events } = agent;
  events.on('revision', onRevision);
  events.on('restart', onRestart);
  events.on('state', onState);
  events.on('probe', onProbe);

  return {
    registry,
    close() {
      events.off('revision', onRevision);
      events.off('restart', onRestart);
      events.off('state', onState);
      events.off('probe', onProbe);
    },
  };
}
