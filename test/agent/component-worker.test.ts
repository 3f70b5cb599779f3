// The worker's supervision between events: nothing runs while a component simply runs (no timers, no store reads),
// probes share the coalesced timers, a crash restart is driven by the exit event and its start is prepared during
// the policy's delay. Time is vitest's fake clock: advanced, never slept.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ComponentWorker, type WorkerDeps } from '../../src/agent/component-worker.js';
import { DEFAULT_RESTART_LIMITS } from '../../src/core/restart-policy.js';
import type { ExitStatus, Instance, PreparedStart, Runtime } from '../../src/runtime/runtime.js';
import type { ComponentRecord, StateStore } from '../../src/store/state-store.js';
import { processComponent } from '../runtime/runtime-fixtures.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

function instance(pid: number): Instance & { exit(s: ExitStatus): void } {
  let exit!: (s: ExitStatus) => void;
  const exited = new Promise<ExitStatus>((r) => (exit = r));
  return { ref: { kind: 'process', pid, startTime: `${pid}00` }, exited, exit };
}

/** A store of one record that counts every call, and a runtime whose instances the test ends. */
function harness(rec: Partial<ComponentRecord> = {}) {
  const calls: string[] = [];
  let record: ComponentRecord = {
    name: 'web',
    hash: 'test',
    version: '1.0.0',
    runtime: 'process',
    position: 0,
    dependencies: [],
    state: 'running',
    held: false,
    since: Date.now(),
    restarts: 0,
    healthySince: Date.now(),
    ...rec,
  };
  const store = {
    component: () => (calls.push('component'), record),
    recordState: (_n: string, state: ComponentRecord['state']) => (
      calls.push(`state:${state}`),
      (record = { ...record, state })
    ),
    recordStart: () => calls.push('recordStart'),
    recordHealthy: (_n: string, at: number) => (
      calls.push('recordHealthy'),
      (record = { ...record, healthySince: at })
    ),
    recordRestart: () => (
      calls.push('recordRestart'),
      (record = { ...record, restarts: record.restarts + 1 }),
      record.restarts
    ),
    resetRestarts: () => (calls.push('resetRestarts'), (record = { ...record, restarts: 0 })),
    recordHeld: () => calls.push('recordHeld'),
    upsertComponent: () => calls.push('upsert'),
  } as unknown as StateStore;
  const prepared: Array<{ inst: ReturnType<typeof instance>; went: boolean; discarded: boolean }> = [];
  const started: Array<ReturnType<typeof instance>> = [];
  let pid = 1000;
  const runtime: Runtime = {
    kind: 'process',
    install: async () => {},
    start: async () => {
      const i = instance(++pid);
      started.push(i);
      return i;
    },
    prepareStart: async (): Promise<PreparedStart> => {
      const p = { inst: instance(++pid), went: false, discarded: false };
      prepared.push(p);
      return {
        instance: p.inst,
        go: () => ((p.went = true), p.inst),
        discard: async () => {
          p.discarded = true;
        },
      };
    },
    stop: async () => {},
    adopt: async () => undefined,
  };
  const probes: number[] = [];
  const noop = () => {};
  const log = { info: noop, warn: noop, error: noop, debug: noop, child: () => log } as unknown as WorkerDeps['log'];
  const deps: WorkerDeps = {
    store,
    runtime: () => runtime,
    paths: () => ({ workDir: '/nonexistent/work', logDir: '/nonexistent/logs' }),
    probe: async () => (probes.push(Date.now()), { ok: true, detail: 'ok', latencyMs: 1 }),
    log,
    now: () => Date.now(),
    random: () => 0.5,
    graceMs: 1000,
    restartLimits: { ...DEFAULT_RESTART_LIMITS, healthySpellMs: 60_000 },
    onRecovered: noop,
    startSlot: (work) => work(),
  };
  return {
    calls,
    store,
    deps,
    prepared,
    started,
    probes,
    get record() {
      return record;
    },
  };
}

const plain = processComponent('web', { command: 'sleep', args: ['1000'] });
const probed = processComponent(
  'web',
  { command: 'sleep', args: ['1000'] },
  { health: { check: 'tcp://127.0.0.1:1', interval: '10s', timeout: '1s', failure_threshold: 3 } },
);

describe('ComponentWorker supervision', () => {
  it('a running component without a check costs nothing: no timer and no store read for a minute', async () => {
    const h = harness();
    const w = new ComponentWorker('web', h.deps);
    w.adopt(instance(41), plain, 'rev');
    const reads = h.calls.length;
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.calls.slice(reads)).toEqual([]);
    w.detach();
  });

  it('probes every interval without reading the store, on the shared timer', async () => {
    const h = harness();
    const w = new ComponentWorker('web', h.deps);
    w.adopt(instance(42), probed, 'rev');
    const reads = h.calls.length;
    await vi.advanceTimersByTimeAsync(61_000);
    expect(h.probes.length).toBeGreaterThanOrEqual(5);
    expect(h.probes.length).toBeLessThanOrEqual(6);
    expect(h.calls.slice(reads)).toEqual([]);
    expect(vi.getTimerCount()).toBe(1);
    w.detach();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('gives the restart budget back once, when the healthy spell ends (one timer, not a poll)', async () => {
    const h = harness({ restarts: 3 });
    const w = new ComponentWorker('web', h.deps);
    w.adopt(instance(43), plain, 'rev');
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(59_000);
    expect(h.calls).not.toContain('resetRestarts');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(h.calls.filter((c) => c === 'resetRestarts')).toHaveLength(1);
    expect(h.record.restarts).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    w.detach();
  });

  it('gives the budget back after one spell when its healthy-since is ahead of the clock (stepped back a day before the timer was armed)', async () => {
    const h = harness({ restarts: 1, healthySince: Date.now() + 86_400_000 });
    const w = new ComponentWorker('web', h.deps);
    w.adopt(instance(44), plain, 'rev');
    await vi.advanceTimersByTimeAsync(59_000);
    expect(h.calls).not.toContain('resetRestarts');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(h.record.restarts).toBe(0);
    w.detach();
  });

  it('a crash is seen by the exit event; the restart is prepared at once and run when the 100 ms delay ends', async () => {
    const h = harness();
    const w = new ComponentWorker('web', h.deps);
    const first = instance(44);
    w.adopt(first, plain, 'rev');
    first.exit({ code: 1, signal: null });
    await vi.advanceTimersByTimeAsync(0);
    expect(h.calls).toContain('recordRestart');
    expect(h.prepared).toHaveLength(1);
    expect(h.prepared[0]!.went).toBe(false);
    await vi.advanceTimersByTimeAsync(99);
    expect(h.prepared[0]!.went).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.prepared[0]!.went).toBe(true);
    expect(h.started).toHaveLength(0); // no second spawn: the prepared one runs
    expect(h.calls).toContain('recordStart');
    expect(w.pid).toBe(h.prepared[0]!.inst.ref.kind === 'process' ? h.prepared[0]!.inst.ref.pid : -1);
    w.detach();
  });

  it('a restart superseded during its delay discards the prepared start (it never runs)', async () => {
    const h = harness();
    const w = new ComponentWorker('web', h.deps);
    const first = instance(45);
    w.adopt(first, plain, 'rev');
    first.exit({ code: 1, signal: null });
    await vi.advanceTimersByTimeAsync(10);
    expect(h.prepared).toHaveLength(1);
    w.detach();
    await vi.advanceTimersByTimeAsync(500);
    expect(h.prepared[0]!.went).toBe(false);
    expect(h.prepared[0]!.discarded).toBe(true);
  });
});
