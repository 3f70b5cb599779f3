// Periodic health probing of one running instance: reports healthy/unhealthy transitions and gates starts on health.
import type { ProbeResult } from './probe.js';

export type HealthState = 'starting' | 'healthy' | 'unhealthy';

/** One change of state, with the probe result that caused it (none when the recipe has no check). */
export interface HealthTransition {
  state: 'healthy' | 'unhealthy';
  previous: HealthState;
  result?: ProbeResult;
  consecutiveFailures: number;
}

/** Injected timers, so tests and the agent can drive time; defaults are the global timers. */
export interface MonitorTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  now(): number;
}

const GUARD_MS = 500;

const globalTimers: MonitorTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  now: () => performance.now(),
};

export interface HealthMonitorOptions {
  intervalMs: number;
  timeoutMs: number;
  failureThreshold: number;
  /** One probe (it must honour its own timeout and the signal); undefined when the recipe has no check: running is healthy. */
  probe?: (signal: AbortSignal) => Promise<ProbeResult>;
  onTransition?: (t: HealthTransition) => void;
  /** Every probe result, for status reporting. */
  onResult?: (r: ProbeResult) => void;
  timers?: MonitorTimers;
}

/**
 * Probes every `intervalMs` (never overlapping), reports `healthy` on the first pass and `unhealthy` after
 * `failureThreshold` consecutive failures; `waitHealthy` is the start gate of the executor.
 */
export class HealthMonitor {
  private stateValue: HealthState = 'starting';
  private failures = 0;
  private last: ProbeResult | undefined;
  private timer: unknown;
  private guard: unknown;
  private inFlight: AbortController | undefined;
  private running = false;
  private readonly timers: MonitorTimers;
  private readonly waiters = new Set<(healthy: boolean) => void>();

  constructor(private readonly opts: HealthMonitorOptions) {
    this.timers = opts.timers ?? globalTimers;
  }

  get state(): HealthState {
    return this.stateValue;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  get lastResult(): ProbeResult | undefined {
    return this.last;
  }

  /** SPEC §2: the start budget is interval × failure_threshold. */
  get startBudgetMs(): number {
    return this.opts.intervalMs * this.opts.failureThreshold;
  }

  /** Starts probing now; without a probe the instance is healthy at once. */
  start(): void {
    if (this.running) return;
    this.running = true;
    if (!this.opts.probe) {
      this.transition('healthy', undefined);
      return;
    }
    this.tick();
  }

  /** Stops probing, aborts a probe in flight, and resolves pending `waitHealthy` calls with false. */
  stop(): void {
    this.running = false;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.guard !== undefined) this.timers.clearTimeout(this.guard);
    this.guard = undefined;
    this.inFlight?.abort();
    this.inFlight = undefined;
    for (const w of [...this.waiters]) w(false);
  }

  /** True as soon as one probe passes (or at once when healthy); false when `budgetMs` passes, on abort or on stop. */
  waitHealthy(budgetMs: number = this.startBudgetMs, signal?: AbortSignal): Promise<boolean> {
    if (this.stateValue === 'healthy') return Promise.resolve(true);
    if (signal?.aborted || !this.running) return Promise.resolve(false);
    return new Promise((resolve) => {
      const settle = (healthy: boolean) => {
        this.waiters.delete(settle);
        this.timers.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(healthy);
      };
      const onAbort = () => settle(false);
      const timer = this.timers.setTimeout(() => settle(false), budgetMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(settle);
    });
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.running || !this.opts.probe) return;
    const started = this.timers.now();
    const ac = new AbortController();
    this.inFlight = ac;
    // A probe that ignores its own timeout still counts as a failure, a little after the timeout.
    const guard = (this.guard = this.timers.setTimeout(() => {
      this.record(ac, started, { ok: false, detail: `no result within ${this.opts.timeoutMs} ms`, latencyMs: Math.round(this.timers.now() - started) });
      ac.abort();
    }, this.opts.timeoutMs + GUARD_MS));
    const settle = (r: ProbeResult) => {
      this.timers.clearTimeout(guard);
      this.record(ac, started, r);
    };
    this.opts.probe(ac.signal).then(settle, (e: unknown) =>
      settle({ ok: false, detail: `probe failed: ${(e as Error)?.message ?? String(e)}`, latencyMs: Math.round(this.timers.now() - started) }),
    );
  }

  private record(ac: AbortController, started: number, r: ProbeResult): void {
    if (ac !== this.inFlight || !this.running) return;
    this.inFlight = undefined;
    this.last = r;
    this.opts.onResult?.(r);
    if (r.ok) {
      this.failures = 0;
      if (this.stateValue !== 'healthy') this.transition('healthy', r);
    } else {
      this.failures++;
      if (this.failures >= this.opts.failureThreshold && this.stateValue !== 'unhealthy') this.transition('unhealthy', r);
    }
    if (!this.running) return; // a transition callback may have stopped us
    const wait = Math.max(0, started + this.opts.intervalMs - this.timers.now());
    this.timer = this.timers.setTimeout(() => this.tick(), wait);
  }

  private transition(state: 'healthy' | 'unhealthy', result: ProbeResult | undefined): void {
    const previous = this.stateValue;
    this.stateValue = state;
    if (state === 'healthy') for (const w of [...this.waiters]) w(true);
    this.opts.onTransition?.({ state, previous, result, consecutiveFailures: this.failures });
  }
}
