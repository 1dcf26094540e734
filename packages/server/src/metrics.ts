import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The server's Prometheus metrics, on a registry of its own (one per app, so tests stay apart). */
export interface Metrics {
  registry: Registry;
  requests: Counter<'route' | 'method' | 'status'>;
  requestSeconds: Histogram<'route'>;
  signals: Counter<'result'>;
  metadataReplies: Counter<'status'>;
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
    requests: new Counter({
      name: 'hearth_http_requests_total',
      help: 'HTTP requests answered',
      labelNames: ['route', 'method', 'status'],
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: 'hearth_http_request_duration_seconds',
      help: 'Time to answer HTTP requests',
      labelNames: ['route'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60],
      registers: [registry],
    }),
    signals: new Counter({
      name: 'hearth_deployment_signals_total',
      help: 'Deployment signals by result',
      labelNames: ['result'],
      registers: [registry],
    }),
    metadataReplies: new Counter({
      name: 'hearth_metadata_replies_total',
      help: 'Guest metadata replies by status',
      labelNames: ['status'],
      registers: [registry],
    }),
  };
}
