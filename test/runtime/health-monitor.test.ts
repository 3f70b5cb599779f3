import { afterEach, describe, expect, it } from 'vitest';
import { HealthMonitor, type HealthTransition, type MonitorTimers } from '../../src/runtime/health-monitor.js';
import type { ProbeResult } from '../../src/runtime/probe.js';
import { waitFor } from './runtime-fixtures.js';

const monitors: HealthMonitor[] = [];
afterEach(() => {
  for (const m of monitors.splice(0)) m.stop();
});

/** A scripted probe: answers from `script` in order (true = pass), then repeats the last answer. */
function scripted(script: boolean[]) {
  let calls = 0;
  const fn = async (): Promise<ProbeResult> => {
    const ok = script[Math.min(calls, script.length - 1)]!;
    calls++;
    return { ok, detail: ok ? 'up' : 'down', latencyMs: 1 };
  };
  return { fn, calls: () => calls };
}

/** Real timers that remember which are still pending, to check that stop() leaves none behind. */
function countingTimers(): MonitorTimers & { pending: Set<unknown> } {
  const pending = new Set<unknown>();
  return {
    pending,
    setTimeout: (fn, ms) => {
      const h: NodeJS.Timeout = setTimeout(() => {
        pending.delete(h);
        fn();
      }, ms);
      pending.add(h);
      return h;
    },
    clearTimeout: (h) => {
      pending.delete(h);
      clearTimeout(h as NodeJS.Timeout);
    },
    now: () => performance.now(),
  };
}

function monitor(probe: ((signal: AbortSignal) => Promise<ProbeResult>) | undefined, intervalMs = 30, failureThreshold = 3) {
  const transitions: HealthTransition[] = [];
  const timers = countingTimers();
  const m = new HealthMonitor({ intervalMs, timeoutMs: 100, failureThreshold, probe, onTransition: (t) => transitions.push(t), timers });
  monitors.push(m);
  return { m, transitions, timers };
}

describe('HealthMonitor', () => {
  it('reports healthy on the first pass, unhealthy after the threshold of consecutive failures, healthy again on recovery', async () => {
    const p = scripted([false, true, false, false, true, false, false, false, true]);
    const { m, transitions } = monitor(p.fn);
    m.start();
    await waitFor(() => transitions.length === 3, 'three transitions');
    expect(transitions.map((t) => t.state)).toEqual(['healthy', 'unhealthy', 'healthy']);
    // Two failures (below the threshold of 3) did not make it unhealthy; the third in a row did.
    expect(transitions[1]).toMatchObject({ previous: 'healthy', consecutiveFailures: 3 });
    expect(p.calls()).toBeGreaterThanOrEqual(9);
    expect(m.state).toBe('healthy');
  });

  it('waitHealthy resolves true as soon as one probe passes, well within its budget', async () => {
    const p = scripted([false, false, true]);
    const { m } = monitor(p.fn, 30, 10);
    m.start();
    const t0 = Date.now();
    expect(m.startBudgetMs).toBe(300);
    expect(await m.waitHealthy()).toBe(true);
    expect(Date.now() - t0).toBeLessThan(250);
    expect(p.calls()).toBe(3);
    expect(await m.waitHealthy()).toBe(true); // already healthy: at once
  });

  it('waitHealthy resolves false when the budget (interval × threshold) passes without a pass', async () => {
    const { m, transitions } = monitor(scripted([false]).fn, 25, 4);
    m.start();
    const t0 = Date.now();
    expect(await m.waitHealthy()).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(95);
    expect(Date.now() - t0).toBeLessThan(1000);
    await waitFor(() => transitions.length === 1, 'the unhealthy transition');
    expect(transitions[0]!.state).toBe('unhealthy');
  });

  it('waitHealthy resolves false on abort and on stop, leaving no timer behind', async () => {
    const { m, timers } = monitor(scripted([false]).fn, 30, 100);
    m.start();
    const ac = new AbortController();
    const aborted = m.waitHealthy(10_000, ac.signal);
    ac.abort();
    expect(await aborted).toBe(false);
    const stopped = m.waitHealthy(10_000);
    m.stop();
    expect(await stopped).toBe(false);
    expect(timers.pending.size).toBe(0);
  });

  it('no check in the recipe: running is healthy at once', async () => {
    const { m, transitions } = monitor(undefined);
    m.start();
    expect(m.state).toBe('healthy');
    expect(await m.waitHealthy(0)).toBe(true);
    expect(transitions).toEqual([{ state: 'healthy', previous: 'starting', result: undefined, consecutiveFailures: 0 }]);
  });

  it('a probe that ignores its timeout counts as a failure; stop aborts it and no probe runs afterwards', async () => {
    let calls = 0;
    let abortedSeen = 0;
    const hanging = (signal: AbortSignal) => {
      calls++;
      return new Promise<ProbeResult>((resolve) =>
        signal.addEventListener('abort', () => {
          abortedSeen++;
          resolve({ ok: true, detail: 'late', latencyMs: 0 });
        }),
      );
    };
    const { m, transitions, timers } = monitor(hanging, 10, 1);
    m.start();
    // timeoutMs 100 + the 500 ms guard: one failure is enough for the threshold of 1.
    await waitFor(() => transitions.length === 1, 'the guard to fail the probe', 3000);
    expect(transitions[0]).toMatchObject({ state: 'unhealthy' });
    expect(transitions[0]!.result?.detail).toMatch(/no result within 100 ms/);
    await waitFor(() => calls === 2, 'the next probe');
    m.stop();
    expect(abortedSeen).toBe(2);
    expect(timers.pending.size).toBe(0); // no interval or guard timer survives stop()
    expect(m.state).toBe('unhealthy');
  });
});
