// A component's health over time, for its worker (component-worker.ts): the wait for readiness within its start
// budget, and the watch while it runs (running ↔ unhealthy, the restart budget given back after a healthy spell).
import type { DesiredComponent } from '../core/desired-state.js';
import type { ProbeResult } from '../runtime/probe.js';
import { coalescedTimers } from '../runtime/coalesced-timers.js';
import type { ComponentPaths } from '../runtime/runtime.js';
import type { ComponentRecord, ComponentState, StateStore } from '../store/state-store.js';

export type Probe = (
  c: DesiredComponent,
  paths: ComponentPaths,
  timeoutMs: number,
  signal: AbortSignal,
) => Promise<ProbeResult>;

/** Without a health check a component is healthy once it has stayed up this long (an instant exit is a crash, not a success). */
export const NO_CHECK_SETTLE_MS = 200;

/** Start budget of SPEC §4: interval × failure_threshold, or the settle time without a check. */
export function startBudgetMs(c: DesiredComponent): number {
  const h = c.recipe.lifecycle.run.health;
  return h ? h.interval * h.failure_threshold : NO_CHECK_SETTLE_MS;
}

/** A timer that an abort cuts short; it removes its listener either way, so long-lived signals do not accumulate them. */
export const abortableSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Probes until one passes (true) or the deadline passes (false). Without a check: stays up for a moment. */
export async function waitHealthy(
  c: DesiredComponent,
  paths: ComponentPaths,
  deadline: number,
  signal: AbortSignal,
  deps: { probe: Probe; now: () => number },
): Promise<boolean> {
  const h = c.recipe.lifecycle.run.health;
  if (!h) {
    await abortableSleep(Math.max(0, deadline - deps.now()), signal);
    return !signal.aborted;
  }
  // Probe promptly at first (a fast component should not wait a whole interval), then every interval.
  let wait = Math.min(100, h.interval);
  for (;;) {
    if (signal.aborted) return false;
    const left = deadline - deps.now();
    if (left <= 0) return false;
    const r = await deps.probe(c, paths, Math.min(h.timeout, left), signal);
    if (r.ok) return true;
    await abortableSleep(Math.min(wait, Math.max(0, deadline - deps.now())), signal);
    wait = Math.min(wait * 2, h.interval);
  }
}

export interface RunningWatch {
  name: string;
  desired: DesiredComponent;
  paths: ComponentPaths;
  store: StateStore;
  probe: Probe;
  now: () => number;
  healthySpellMs: number;
  /** A change of state to record and log (the worker's). */
  onState: (state: ComponentState, reason?: string) => void;
}

/**
 * While an instance runs: its health check every interval (running ↔ unhealthy), and its restart budget given back
 * after a healthy spell. Event-driven otherwise: without a check nothing runs until the spell ends. The record is read
 * once here, not on every tick: until the watch is cancelled its worker is the record's only writer. Timers are the
 * shared coalesced ones (one Node timer for every component). Returns the cancel function.
 */
export function watchRunning(w: RunningWatch): () => void {
  const { name, desired: c, store, now } = w;
  const h = c.recipe.lifecycle.run.health;
  const abort = new AbortController();
  const timers = new Map<'probe' | 'budget', () => void>();
  const live = () => !abort.signal.aborted;
  const rec = store.component(name);
  let state = rec?.state;

  /** One timer at the spell's end (SPEC §5), only when there are restarts to give back; an exit before it counts the spell itself. */
  const refreshBudgetAfterSpell = (r: Pick<ComponentRecord, 'restarts' | 'healthySince'> | undefined) => {
    if (!r || r.restarts <= 0 || r.healthySince === undefined) return;
    const armedAt = now();
    // A healthy-since ahead of the clock: the clock was stepped back after it was written (between a restart and this
    // timer). The spell then ends a spell from now, on the monotonic clock, not a day and a spell from now.
    const ahead = r.healthySince > armedAt;
    const wait = Math.min(w.healthySpellMs, Math.max(0, r.healthySince + w.healthySpellMs - armedAt));
    timers.get('budget')?.();
    timers.set(
      'budget',
      coalescedTimers.schedule(wait, () => {
        if (!live() || state === 'unhealthy') return;
        const cur = store.component(name);
        // The timer waited on the monotonic clock. A wall clock that moved less meanwhile was stepped back: the spell
        // is over all the same (by the wall clock alone, a day's step back would keep the restarts for a day).
        const at = now();
        const steppedBack = at < armedAt + wait;
        if (
          cur?.healthySince !== undefined &&
          (steppedBack || ahead || at - cur.healthySince >= w.healthySpellMs) &&
          cur.restarts > 0
        )
          store.resetRestarts(name);
      }),
    );
  };
  refreshBudgetAfterSpell(rec);

  if (h) {
    let failures = 0;
    const tick = async () => {
      if (!live()) return;
      const r = await w.probe(c, w.paths, h.timeout, abort.signal);
      if (!live()) return;
      if (r.ok) {
        failures = 0;
        if (state === 'unhealthy') {
          const at = now();
          store.recordHealthy(name, at);
          w.onState('running');
          state = 'running';
          if (rec) refreshBudgetAfterSpell({ restarts: rec.restarts, healthySince: at });
        }
      } else if (++failures === h.failure_threshold && state === 'running') {
        w.onState('unhealthy', `health check failed ${failures} times: ${r.detail}`);
        state = 'unhealthy';
      }
      next();
    };
    const next = () => {
      if (live())
        timers.set(
          'probe',
          coalescedTimers.schedule(h.interval, () => void tick()),
        );
    };
    next();
  }
  return () => {
    abort.abort();
    for (const cancel of timers.values()) cancel();
    timers.clear();
  };
}
