// The agent's own process on GET /metrics: the series prom-client's collectDefaultMetrics gave (same names, HELP
// texts, types and labels, so dashboards and alerts built on them keep working), minus its *_total gauges, which
// break the naming rules (promtool check metrics refuses them; the per-type gauges carry the same numbers).
import { readdirSync, readFileSync } from 'node:fs';
import {
  constants as perfConstants,
  monitorEventLoopDelay,
  PerformanceObserver,
  type PerformanceEntry,
} from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, type MetricSet } from './prometheus-text.js';

/**
 * How often the event-loop delay is sampled: every 100 ms, not prom-client's 10 ms, whose sampling timer alone woke an
 * idle agent ~190 times a second (most of its idle CPU, issue 16); ten samples a second still give a p99 over an
 * apply. Node's histogram records each sampling interval whole, so nodejs_eventloop_lag_* read this much over the
 * delay itself (0.1 s; with prom-client's default it was 0.01 s).
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

const startSeconds = Math.round(Date.now() / 1000 - process.uptime());
const GC_KINDS: Record<number, string> = {
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/** VmRSS, VmSize and VmData of /proc/self/status in bytes (the kernel's own figures, as prom-client read them). */
function procStatus(): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const m = /^(VmRSS|VmSize|VmData):\s*(\d+) kB/.exec(line);
      if (m) out[m[1]!] = Number(m[2]) * 1024;
    }
  } catch {
    /* not Linux: the gauges stay at 0 */
  }
  return out;
}

function maxFds(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    return line === undefined ? undefined : Number(line.split(/ {2,}/)[1]);
  } catch {
    return undefined;
  }
}

/** A per-type gauge set afresh from a list of type names (a type that is gone disappears). */
function setCounts(g: Gauge, names: readonly string[]): void {
  g.reset();
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  for (const [type, n] of counts) g.set({ type }, n);
}

/** The class names of what process._getActiveHandles() and _getActiveRequests() return (undocumented, as prom-client used them). */
function classNames(list: unknown[] | undefined): string[] {
  return (list ?? []).flatMap((x) => {
    const name = (x as { constructor?: { name?: string } } | null | undefined)?.constructor?.name;
    return name === undefined ? [] : [name];
  });
}

type ProcessInternals = { _getActiveHandles?(): unknown[]; _getActiveRequests?(): unknown[] };

/** Adds the process series to `metrics`; the returned function stops the event-loop and GC samplers (the server's close). */
export function addProcessMetrics(metrics: MetricSet): () => void {
  let lastCpu = process.cpuUsage();
  // Counted from when the server was built, as prom-client did: each scrape adds what was used since the last.
  const cpuUser = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    collect() {
      const now = process.cpuUsage();
      const user = now.user - lastCpu.user;
      const system = now.system - lastCpu.system;
      lastCpu = now;
      cpuUser.inc({}, user / 1e6);
      cpuSystem.inc({}, system / 1e6);
      cpuTotal.inc({}, (user + system) / 1e6);
    },
  });
  const cpuSystem = new Counter({
    name: 'process_cpu_system_seconds_total',
    help: 'Total system CPU time spent in seconds.',
  });
  const cpuTotal = new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
  });
  metrics.add(cpuUser);
  metrics.add(cpuSystem);
  metrics.add(cpuTotal);
  const startTime: Gauge = metrics.add(
    new Gauge({
      name: 'process_start_time_seconds',
      help: 'Start time of the process since unix epoch in seconds.',
      collect: () => startTime.set({}, startSeconds),
    }),
  );

  const rss = new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes.',
    collect() {
      const s = procStatus();
      if (s.VmRSS !== undefined) rss.set({}, s.VmRSS);
      if (s.VmSize !== undefined) vsize.set({}, s.VmSize);
      if (s.VmData !== undefined) heap.set({}, s.VmData);
    },
  });
  const vsize = new Gauge({ name: 'process_virtual_memory_bytes', help: 'Virtual memory size in bytes.' });
  const heap = new Gauge({ name: 'process_heap_bytes', help: 'Process heap size in bytes.' });
  metrics.add(rss);
  metrics.add(vsize);
  metrics.add(heap);

  const openFds: Gauge = metrics.add(
    new Gauge({
      name: 'process_open_fds',
      help: 'Number of open file descriptors.',
      collect() {
        try {
          // Less the descriptor readdirSync itself used.
          openFds.set({}, readdirSync('/proc/self/fd').length - 1);
        } catch {
          /* not Linux */
        }
      },
    }),
  );
  const max = maxFds();
  if (max !== undefined)
    metrics.add(new Gauge({ name: 'process_max_fds', help: 'Maximum number of open file descriptors.' })).set({}, max);

  // Event-loop delay: the histogram's figures since the last scrape, and one setImmediate's wait measured now and
  // shown at the next scrape (prom-client's nodejs_eventloop_lag_seconds).
  const delay = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS });
  delay.enable();
  const lagGauges = {
    min: new Gauge({ name: 'nodejs_eventloop_lag_min_seconds', help: 'The minimum recorded event loop delay.' }),
    max: new Gauge({ name: 'nodejs_eventloop_lag_max_seconds', help: 'The maximum recorded event loop delay.' }),
    mean: new Gauge({ name: 'nodejs_eventloop_lag_mean_seconds', help: 'The mean of the recorded event loop delays.' }),
    stddev: new Gauge({
      name: 'nodejs_eventloop_lag_stddev_seconds',
      help: 'The standard deviation of the recorded event loop delays.',
    }),
    p50: new Gauge({
      name: 'nodejs_eventloop_lag_p50_seconds',
      help: 'The 50th percentile of the recorded event loop delays.',
    }),
    p90: new Gauge({
      name: 'nodejs_eventloop_lag_p90_seconds',
      help: 'The 90th percentile of the recorded event loop delays.',
    }),
    p99: new Gauge({
      name: 'nodejs_eventloop_lag_p99_seconds',
      help: 'The 99th percentile of the recorded event loop delays.',
    }),
  };
  const lag: Gauge = new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Lag of event loop in seconds.',
    collect() {
      const start = process.hrtime.bigint();
      setImmediate(() => lag.set({}, Number(process.hrtime.bigint() - start) / 1e9));
      lagGauges.min.set({}, delay.min / 1e9);
      lagGauges.max.set({}, delay.max / 1e9);
      lagGauges.mean.set({}, delay.mean / 1e9);
      lagGauges.stddev.set({}, delay.stddev / 1e9);
      lagGauges.p50.set({}, delay.percentile(50) / 1e9);
      lagGauges.p90.set({}, delay.percentile(90) / 1e9);
      lagGauges.p99.set({}, delay.percentile(99) / 1e9);
      delay.reset();
    },
  });
  metrics.add(lag);
  for (const g of Object.values(lagGauges)) metrics.add(g);

  const internals = process as unknown as ProcessInternals;
  const handles: Gauge = new Gauge({
    name: 'nodejs_active_handles',
    help: 'Number of active libuv handles grouped by handle type. Every handle type is C++ class name.',
    labelled: true,
    collect: () => setCounts(handles, classNames(internals._getActiveHandles?.())),
  });
  const requests: Gauge = new Gauge({
    name: 'nodejs_active_requests',
    help: 'Number of active libuv requests grouped by request type. Every request type is C++ class name.',
    labelled: true,
    collect: () => setCounts(requests, classNames(internals._getActiveRequests?.())),
  });
  const resources: Gauge = new Gauge({
    name: 'nodejs_active_resources',
    help: 'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
    labelled: true,
    collect: () => setCounts(resources, process.getActiveResourcesInfo()),
  });
  metrics.add(handles);
  metrics.add(requests);
  metrics.add(resources);

  const heapTotal: Gauge = new Gauge({
    name: 'nodejs_heap_size_total_bytes',
    help: 'Process heap size from Node.js in bytes.',
    collect() {
      const m = process.memoryUsage();
      heapTotal.set({}, m.heapTotal);
      heapUsed.set({}, m.heapUsed);
      external.set({}, m.external);
    },
  });
  const heapUsed = new Gauge({
    name: 'nodejs_heap_size_used_bytes',
    help: 'Process heap size used from Node.js in bytes.',
  });
  const external = new Gauge({ name: 'nodejs_external_memory_bytes', help: 'Node.js external memory size in bytes.' });
  metrics.add(heapTotal);
  metrics.add(heapUsed);
  metrics.add(external);

  const spaces = {
    total: new Gauge({
      name: 'nodejs_heap_space_size_total_bytes',
      help: 'Process heap space size total from Node.js in bytes.',
      labelled: true,
    }),
    used: new Gauge({
      name: 'nodejs_heap_space_size_used_bytes',
      help: 'Process heap space size used from Node.js in bytes.',
      labelled: true,
    }),
    available: new Gauge({
      name: 'nodejs_heap_space_size_available_bytes',
      help: 'Process heap space size available from Node.js in bytes.',
      labelled: true,
    }),
  };
  spaces.total.opts.collect = () => {
    for (const s of getHeapSpaceStatistics()) {
      const space = s.space_name.slice(0, s.space_name.indexOf('_space'));
      spaces.total.set({ space }, s.space_size);
      spaces.used.set({ space }, s.space_used_size);
      spaces.available.set({ space }, s.space_available_size);
    }
  };
  for (const g of Object.values(spaces)) metrics.add(g);

  const [major, minor, patch] = process.version.slice(1).split('.').map(Number);
  const version: Gauge = new Gauge({
    name: 'nodejs_version_info',
    help: 'Node.js version info.',
    labelled: true,
    collect: () => version.set({ version: process.version, major: major!, minor: minor!, patch: patch! }, 1),
  });
  metrics.add(version);

  const gc = metrics.add(
    new Histogram({
      name: 'nodejs_gc_duration_seconds',
      help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
      buckets: [0.001, 0.01, 0.1, 1, 2, 5],
    }),
  );
  const gcObserver = new PerformanceObserver((list) => {
    const entry = list.getEntries()[0] as (PerformanceEntry & { detail?: { kind?: number } }) | undefined;
    if (entry) gc.observe({ kind: GC_KINDS[entry.detail?.kind ?? -1] ?? 'undefined' }, entry.duration / 1000);
  });
  gcObserver.observe({ entryTypes: ['gc'] });

  return () => {
    delay.disable();
    gcObserver.disconnect();
  };
}
