// GET /metrics: the series operators alert on (revision, apply durations, states, restarts, crash loops, probe
// latency), read after a crash loop, and accepted by `promtool check metrics` (Debian's `prometheus` package).
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from '../support/http-inject.js';
import { needs } from '../support/requirements.js';
import { crasher, sleeper } from '../support/stack-fixture.js';
import { apiStack, until, type ApiStack } from './api-stack.js';

const promtool = needs('promtool');

describe('GET /metrics', { timeout: 30_000 }, () => {
  let s: ApiStack;
  let text: string;

  beforeAll(async () => {
    s = await apiStack({
      components: () => [
        { ...sleeper('db'), health: { check: 'cmd:true', interval: '100ms', timeout: '1s', failureThreshold: 5 } },
        crasher('crasher'),
      ],
      // A crash loop in well under a second.
      restartLimits: { firstRestartMs: 10, maxBackoffMs: 40, crashLoopLimit: 3, healthySpellMs: 600_000 },
    });
    await until(
      () => s.agent.store.component('crasher')?.state === 'crash-looping',
      'the crasher to be held as crash-looping',
    );
    const r = await inject(s.server, { method: 'GET', url: '/metrics' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    text = r.body;
  });
  afterAll(async () => {
    await s?.close();
  });

  /** The value of one sample line, by its exact name and labels. */
  const sample = (series: string): number | undefined => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  it('names the applied revision and says it is unsigned', async () => {
    expect(sample(`keystone_revision_info{revision="${await s.fx.revisionId()}",unsigned="true"}`)).toBe(1);
  });

  it('gives each component its state as a 0/1 gauge', () => {
    expect(sample('keystone_component_state{component="db",state="running"}')).toBe(1);
    expect(sample('keystone_component_state{component="db",state="stopped"}')).toBe(0);
    expect(sample('keystone_component_state{component="crasher",state="crash-looping"}')).toBe(1);
  });

  it('counts restarts and crash loops', () => {
    expect(sample('keystone_component_restarts_total{component="crasher"}')).toBeGreaterThanOrEqual(3);
    expect(sample('keystone_component_restarts_total{component="db"}')).toBe(0);
    expect(sample('keystone_crash_loops_total{component="crasher"}')).toBe(1);
    expect(sample('keystone_crash_loops_total{component="db"}')).toBe(0);
  });

  it('times applies and probes', () => {
    // The first apply failed: the crasher never became healthy.
    expect(sample('keystone_apply_duration_seconds_count{outcome="failure"}')).toBe(1);
    expect(sample('keystone_probe_latency_seconds_count{component="db",result="ok"}')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^keystone_probe_latency_seconds_bucket\{le="0\.001",component="db",result="ok"\} \d+$/m);
  });

  it('includes the agent process itself', () => {
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
  });

  // Skipped only where promtool is missing; the run's summary counts it (test/support/skip-summary-reporter.ts).
  it.skipIf(promtool.skip)(promtool.title('is accepted by promtool check metrics'), () => {
    // promtool reads the exposition from stdin; lint problems make it exit non-zero with the reasons on stdout/stderr.
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  });
});
