// The Prometheus text exposition format (version 0.0.4), written by hand: counters, gauges and histograms with labels,
// which is all GET /metrics uses. prom-client did this before and cost the agent ~1.5 MiB of resident memory for a
// page scraped once a minute (issue 31); the output is the same, line for line (HELP, TYPE, series, blank lines).

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type Labels = Record<string, string | number>;

/** prom-client's spelling of the values Prometheus reads: `Nan`, `+Inf`, `-Inf`, else the number as JS prints it. */
function valueText(value: number): string {
  if (Number.isNaN(value)) return 'Nan';
  if (!Number.isFinite(value)) return value < 0 ? '-Inf' : '+Inf';
  return `${value}`;
}

const escapeText = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${typeof v === 'string' ? escapeText(v).replace(/"/g, '\\"') : v}"`,
  );
  return parts.length ? `{${parts.join(',')}}` : '';
}

/** Series are kept by their label values in a fixed key order, so `{a,b}` and `{b,a}` are one series. */
function keyOf(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}:${labels[k]}`)
    .join(',');
}

interface MetricOptions {
  name: string;
  help: string;
  /** Called before each exposition: gauges that read their value when scraped set it here. */
  collect?: () => void;
}

abstract class Metric {
  protected readonly series = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly opts: MetricOptions,
    readonly type: 'counter' | 'gauge' | 'histogram',
    unlabelled: boolean,
  ) {
    // An unlabelled counter or gauge is shown as 0 before it is first set (as prom-client does).
    if (unlabelled) this.series.set('', { labels: {}, value: 0 });
  }

  reset(): void {
    this.series.clear();
  }

  protected lines(): string[] {
    return [...this.series.values()].map((s) => `${this.opts.name}${labelText(s.labels)} ${valueText(s.value)}`);
  }

  text(): string {
    this.opts.collect?.();
    const name = escapeText(this.opts.name);
    return [`# HELP ${name} ${escapeText(this.opts.help)}`, `# TYPE ${name} ${this.type}`, ...this.lines()].join('\n');
  }
}

export class Counter extends Metric {
  constructor(opts: MetricOptions & { labelled?: boolean }) {
    super(opts, 'counter', !opts.labelled);
  }

  inc(labels: Labels = {}, by = 1): void {
    const key = keyOf(labels);
    const s = this.series.get(key);
    if (s) s.value += by;
    else this.series.set(key, { labels, value: by });
  }
}

export class Gauge extends Metric {
  constructor(opts: MetricOptions & { labelled?: boolean }) {
    super(opts, 'gauge', !opts.labelled);
  }

  set(labels: Labels, value: number): void {
    const key = keyOf(labels);
    const s = this.series.get(key);
    if (s) s.value = value;
    else this.series.set(key, { labels, value });
  }
}

interface HistogramSeries {
  labels: Labels;
  /** Per bucket (not cumulative), in the order of `buckets`. */
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram {
  readonly type = 'histogram';
  private readonly series = new Map<string, HistogramSeries>();
  constructor(readonly opts: MetricOptions & { buckets: readonly number[] }) {}

  observe(labels: Labels, value: number): void {
    const key = keyOf(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels, counts: this.opts.buckets.map(() => 0), sum: 0, count: 0 }));
    const i = this.opts.buckets.findIndex((b) => value <= b);
    if (i >= 0) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  text(): string {
    const { name, help, buckets } = this.opts;
    const out = [`# HELP ${escapeText(name)} ${escapeText(help)}`, `# TYPE ${escapeText(name)} histogram`];
    for (const s of this.series.values()) {
      let acc = 0;
      // `le` first, then the series' own labels: the order prom-client writes them in.
      buckets.forEach((b, i) => {
        acc += s.counts[i]!;
        out.push(`${name}_bucket${labelText({ le: b, ...s.labels })} ${valueText(acc)}`);
      });
      out.push(`${name}_bucket${labelText({ le: '+Inf', ...s.labels })} ${valueText(s.count)}`);
      out.push(`${name}_sum${labelText(s.labels)} ${valueText(s.sum)}`);
      out.push(`${name}_count${labelText(s.labels)} ${valueText(s.count)}`);
    }
    return out.join('\n');
  }
}

/** What one GET /metrics shows, in the order the metrics were added. */
export class MetricSet {
  private readonly metrics: Array<{ text(): string }> = [];

  add<M extends { text(): string }>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }

  text(): string {
    return `${this.metrics.map((m) => m.text()).join('\n\n')}\n`;
  }
}
