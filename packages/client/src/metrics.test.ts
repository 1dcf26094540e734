import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type TestServer } from '../../../test/helpers/server.ts';
import { createTransport } from './http.ts';
import { normalizeClientOptions } from './options.ts';
import { createClient } from './client.ts';
import { HearthApiError } from './errors.ts';
import { metricMethods, type MetricMethods } from './metrics.ts';

// The metric and alarm methods against a real hearth-server on 127.0.0.1, in this process.

let server: TestServer;
let operator: MetricMethods;

before(async () => {
  server = await startServer();
  operator = metricMethods(createTransport(normalizeClientOptions({ url: server.url, token: server.token })));
});
after(() => server.close());

test('alarms round trip: create, list, show, history, delete; errors carry their code', async () => {
  const created = await operator.createAlarm({
    name: 'cpu-high',
    metric_name: 'CPUUtilization',
    statistic: 'Average',
    period: 60,
    threshold: 80,
    comparison_operator: 'GreaterThanThreshold',
  });
  assert.equal(created.state, 'INSUFFICIENT_DATA');
  assert.deepEqual(
    (await operator.listAlarms()).map((a) => a.name),
    ['cpu-high'],
  );
  assert.equal((await operator.getAlarm('cpu-high')).id, created.id);
  assert.deepEqual(await operator.alarmHistory('cpu-high', 5), []);
  await operator.deleteAlarm('cpu-high');
  await assert.rejects(
    operator.getAlarm('cpu-high'),
    (error: unknown) => error instanceof HearthApiError && error.code === 'ERR_ALARM_NOT_FOUND',
  );
});

test('an agent puts samples with its credential; the operator lists them', async () => {
  const vm = await createClient({ url: server.url, token: server.token }).createServer({ name: 'vm-metrics' });
  const agent = metricMethods(createTransport(normalizeClientOptions({ url: server.url, token: vm.credential.token })));
  assert.deepEqual(await agent.putMetrics({ samples: [{ metric_name: 'Heartbeat', value: 1 }] }), { stored: 1 });
  const samples = await operator.listMetrics({ metric_name: 'Heartbeat' });
  assert.equal(samples.length, 1);
  assert.equal(samples[0]!.server_id, vm.server.id);
  await assert.rejects(
    operator.putMetrics({ samples: [{ metric_name: 'Heartbeat', value: 1 }] }),
    (error: unknown) => error instanceof HearthApiError && error.status === 403,
  );
});
