import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type HistogramConfiguration,
  type LabelValues,
  type MetricObjectWithValues,
  type MetricType,
  type MetricValueWithName,
} from 'prom-client';

/** The server's Prometheus metrics, on a registry of its own (one per app, so tests stay apart). */
export interface Metrics {
  registry: Registry;
  requests: Counter<'route' | 'method' | 'status'>;
  requestSeconds: Histogram<'route'>;
  signals: Counter<'result'>;
  metadataReplies: Counter<'status'>;
  /** Events deleted by the events retention. */
  eventsPurged: Counter;
}

/** Entries per label set, found by one Map lookup per label value (no key string is built). */
class LabelSets<T extends string, E> {
  private readonly root = new Map<unknown, unknown>();
  private readonly all: E[] = [];

  constructor(
    private readonly labelNames: readonly T[],
    private readonly create: (labels: LabelValues<T>) => E,
  ) {}

  /** The entry of a label set, created on first use. */
  get(labels: LabelValues<T>): E {
    let node = this.root;
    const last = this.labelNames.length - 1;
    for (let i = 0; i < last; i++) {
      const value = labels[this.labelNames[i]!];
      let next = node.get(value) as Map<unknown, unknown> | undefined;
      if (!next) node.set(value, (next = new Map()));
      node = next;
    }
    const value = last >= 0 ? labels[this.labelNames[last]!] : undefined;
    let entry = node.get(value) as E | undefined;
    if (entry === undefined) {
      entry = this.create({ ...labels });
      node.set(value, entry);
      this.all.push(entry);
    }
    return entry;
  }

  /** Every entry, in creation order. */
  values(): readonly E[] {
    return this.all;
  }

  clear(): void {
    this.root.clear();
    this.all.length = 0;
  }
}

/**
 * A counter whose labelled `inc` costs a Map lookup: counts per label set are kept here and handed
 * to prom-client (which hashes and validates the labels, ~1 µs a call) once per label set per scrape.
 */
class BufferedCounter<T extends string> extends Counter<T> {
  private readonly pending: LabelSets<T, { labels: LabelValues<T>; count: number }>;

  constructor(configuration: CounterConfiguration<T>) {
    super(configuration);
    this.pending = new LabelSets(configuration.labelNames ?? [], (labels) => ({ labels, count: 0 }));
    // prom-client sets `inc` on the instance in its constructor, so it is replaced here.
    const record = this.inc.bind(this);
    this.flush = () => {
      for (const entry of this.pending.values()) {
        if (entry.count === 0) continue;
        record(entry.labels, entry.count);
        entry.count = 0;
      }
    };
    this.inc = ((labels?: LabelValues<T> | number, value?: number) => {
      if (labels === undefined || typeof labels === 'number') return record(labels);
      this.pending.get(labels).count += value ?? 1;
    }) as Counter<T>['inc'];
  }

  private readonly flush: () => void;

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<T>>> {
    this.flush();
    return super.get();
  }

  override reset(): void {
    // prom-client's constructor calls reset() before this class's fields exist.
    (this.pending as typeof this.pending | undefined)?.clear();
    super.reset();
  }
}

/**
 * A histogram whose labelled `observe` costs a Map lookup and a bucket search: it keeps its own
 * counts per label set and renders the series prom-client would (`_bucket` with `le`, `_sum`,
 * `_count`). Only `observe(labels, value)` is buffered; nothing in hearth uses `labels()`.
 */
class BufferedHistogram<T extends string> extends Histogram<T> {
  private readonly series: LabelSets<T, { labels: LabelValues<T>; buckets: number[]; sum: number; count: number }>;
  private readonly bounds: number[];
  private readonly settings: { name: string; help: string };

  constructor(configuration: HistogramConfiguration<T> & { buckets: number[] }) {
    super(configuration);
    this.bounds = configuration.buckets;
    this.settings = { name: configuration.name, help: configuration.help };
    this.series = new LabelSets(configuration.labelNames ?? [], (labels) => ({
      labels,
      buckets: this.bounds.map(() => 0),
      sum: 0,
      count: 0,
    }));
    // prom-client sets `observe` on the instance in its constructor, so it is replaced here.
    this.observe = ((labels: LabelValues<T> | number, value?: number) => {
      const observed = typeof labels === 'number' ? labels : (value ?? 0);
      const labelSet = typeof labels === 'number' ? {} : labels;
      const entry = this.series.get(labelSet);
      const bounds = this.bounds;
      for (let i = 0; i < bounds.length; i++) {
        if (observed <= bounds[i]!) {
          entry.buckets[i]!++;
          break;
        }
      }
      entry.sum += observed;
      entry.count++;
    }) as Histogram<T>['observe'];
  }

  /** What the registry renders (prom-client's own shape: a bucket's series labels are "shared"). */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<T> & { sharedLabels: LabelValues<T> }>> {
    const { name, help } = this.settings;
    const bucket = `${name}_bucket`;
    const values: Array<MetricValueWithName<T> & { sharedLabels: LabelValues<T> }> = [];
    for (const { labels, buckets, sum, count } of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += buckets[i]!;
        values.push({ metricName: bucket, labels: { le } as LabelValues<T>, sharedLabels: labels, value: cumulative });
      });
      values.push({ metricName: bucket, labels: { le: '+Inf' } as LabelValues<T>, sharedLabels: labels, value: count });
      values.push({ metricName: `${name}_sum`, labels: {}, sharedLabels: labels, value: sum });
      values.push({ metricName: `${name}_count`, labels: {}, sharedLabels: labels, value: count });
    }
    // prom-client's typings say MetricType is a numeric enum; at run time `type` is the string.
    return { name, help, type: 'histogram' as unknown as MetricType, values, aggregator: 'sum', collect: () => undefined };
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<T>>> {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ sharedLabels, labels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } })),
    };
  }

  override reset(): void {
    // prom-client's constructor calls reset() before this class's fields exist.
    (this.series as typeof this.series | undefined)?.clear();
    super.reset();
  }
}

/** Creates the registry; `gauges` are read at scrape time. */
export function createMetrics(gauges: Record<string, { help: string; read: () => number }>): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hearth_process_' });
  for (const [name, gauge] of Object.entries(gauges)) {
    new Gauge({
      name,
      help: gauge.help,
      registers: [registry],
      collect() {
        this.set(gauge.read());
      },
    });
  }
  return {
    registry,
    requests: new BufferedCounter({
      name: 'hearth_http_requests_total',
      help: 'HTTP requests answered',
      labelNames: ['route', 'method', 'status'],
      registers: [registry],
    }),
    requestSeconds: new BufferedHistogram({
      name: 'hearth_http_request_duration_seconds',
      help: 'Time to answer HTTP requests',
      labelNames: ['route'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60],
      registers: [registry],
    }),
    signals: new BufferedCounter({
      name: 'hearth_deployment_signals_total',
      help: 'Deployment signals by result',
      labelNames: ['result'],
      registers: [registry],
    }),
    metadataReplies: new BufferedCounter({
      name: 'hearth_metadata_replies_total',
      help: 'Guest metadata replies by status',
      labelNames: ['status'],
      registers: [registry],
    }),
    eventsPurged: new Counter({
      name: 'hearth_events_purged_total',
      help: 'Events deleted because they were older than the events retention',
      registers: [registry],
    }),
  };
}
