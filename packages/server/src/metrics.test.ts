import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { createMetrics } from './metrics.ts';

const lines = async (registry: Registry, prefix: string) => (await registry.metrics()).split('\n').filter((l) => l.startsWith(prefix));

test('buffered request metrics render exactly what plain prom-client metrics render', async () => {
  const metrics = createMetrics({});
  const plain = new Registry();
  const counter = new Counter({
    name: 'hearth_http_requests_total',
    help: 'HTTP requests answered',
    labelNames: ['route', 'method', 'status'],
    registers: [plain],
  });
  const histogram = new Histogram({
    name: 'hearth_http_request_duration_seconds',
    help: 'Time to answer HTTP requests',
    labelNames: ['route'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60],
    registers: [plain],
  });
  for (let i = 0; i < 500; i++) {
    for (const route of ['/v1/guest/metadata', '/v1/guest/deployments/:id/signal']) {
      const labels = { route, method: i % 5 ? 'GET' : 'POST', status: String(200 + (i % 3)) };
      const seconds = (i % 17) / 50 + (i % 2 ? 70 : 0); // some beyond the last bucket
      metrics.requests.inc(labels);
      metrics.requestSeconds.observe({ route }, seconds);
      counter.inc(labels);
      histogram.observe({ route }, seconds);
    }
  }
  const mine = await lines(metrics.registry, 'hearth_http_');
  assert.ok(mine.length > 20, 'series were rendered');
  assert.deepEqual(mine, await lines(plain, 'hearth_http_'));
  assert.deepEqual(
    (await metrics.requestSeconds.get()).values.map((v) => v.value),
    (await histogram.get()).values.map((v) => v.value),
  );
  // Counts keep adding up across scrapes.
  metrics.requests.inc({ route: '/v1/guest/metadata', method: 'GET', status: '304' }, 2);
  counter.inc({ route: '/v1/guest/metadata', method: 'GET', status: '304' }, 2);
  assert.deepEqual(await lines(metrics.registry, 'hearth_http_requests'), await lines(plain, 'hearth_http_requests'));
  metrics.registry.resetMetrics();
  assert.deepEqual(await lines(metrics.registry, 'hearth_http_request_duration'), []);
});

test('a labelled counter counts per label set', async () => {
  const metrics = createMetrics({});
  metrics.signals.inc({ result: 'complete' });
  metrics.signals.inc({ result: 'complete' });
  metrics.signals.inc({ result: 'rejected' });
  assert.deepEqual(await lines(metrics.registry, 'hearth_deployment_signals_total'), [
    'hearth_deployment_signals_total{result="complete"} 2',
    'hearth_deployment_signals_total{result="rejected"} 1',
  ]);
});
