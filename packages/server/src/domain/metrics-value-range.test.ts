// A sample's value is held to CloudWatch's range, -2^360 to 2^360, on every route (before, any finite
// double was stored, and two samples of 1.79e308 averaged to Infinity); rows stored before the check
// are skipped by the evaluator, so no statistic is Infinity or NaN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Alarm } from '@hearth/protocol';
import { ADMIN, errorCode, registerServer, testApp } from '../test-support.ts';
import { SIGNED_HOST, signedMetricForm } from '../test-support-wire.ts';
import { parsePutMetricData } from './metrics-query-form.ts';
import { isHearthError } from './errors.ts';

const HOST = SIGNED_HOST;

/** A signed PutMetricData form with one CPU sample of `value`. */
function signedForm(accessKeyId: string, secret: string, value: string): string {
  return signedMetricForm(accessKeyId, secret, {
    Namespace: 'system/linux',
    'MetricData.member.1.MetricName': 'CPUUtilization',
    'MetricData.member.1.Value': value,
  });
}
const TOO_BIG = '1.79e308';

const putForm = (app: FastifyInstance, payload: string) =>
  app.inject({
    method: 'POST',
    url: '/v1/',
    headers: { host: HOST, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    payload,
  });

const stored = async (app: FastifyInstance) =>
  (await app.services.store.reader.selectFrom('metric_samples').select('value').execute()).map((row) => Number(row.value));

function reasonOf(value: string): string {
  try {
    parsePutMetricData({ 'MetricData.member.1.MetricName': 'CPU', 'MetricData.member.1.Value': value });
  } catch (error) {
    assert.ok(isHearthError(error));
    assert.equal(error.code, 'ERR_METRIC_INVALID');
    return error.message;
  }
  assert.fail(`expected ${value} to be refused`);
}

test('PutMetricData: values within ±2^360 are taken, values outside it (1.79e308, 1e109, 1e400) are refused naming the parameter', () => {
  for (const value of [String(2 ** 360), String(-(2 ** 360)), '1e108', '-1e108', '0']) {
    assert.equal(parsePutMetricData({ 'MetricData.member.1.MetricName': 'CPU', 'MetricData.member.1.Value': value }).samples.length, 1);
  }
  assert.match(reasonOf(TOO_BIG), /MetricData\.member\.1\.Value 1\.79e308 is outside the range CloudWatch takes, -2\^360 to 2\^360/);
  assert.match(reasonOf('-1e109'), /Value -1e109 is outside the range/);
  assert.match(reasonOf('1e400'), /Value 1e400 is outside the range/);
  assert.match(reasonOf('NaN'), /Value "NaN" is not a number/);
});

test('signed PutMetricData of 1.79e308: a 400 InvalidParameterValue in CloudWatch XML, and nothing stored', async () => {
  const { app, done } = await testApp();
  try {
    const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'vm' } });
    const { access_key_id, secret_access_key } = reply.json<{ credential: { access_key_id: string; secret_access_key: string } }>()
      .credential;
    const refused = await putForm(app, signedForm(access_key_id, secret_access_key, TOO_BIG));
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(refused.headers['content-type'] as string, /xml/);
    assert.match(refused.body, /<Code>InvalidParameterValue<\/Code>/);
    assert.match(refused.body, /MetricData\.member\.1\.Value 1\.79e308 is outside the range/);
    assert.deepEqual(await stored(app), []);
    const taken = await putForm(app, signedForm(access_key_id, secret_access_key, '1e108'));
    assert.equal(taken.statusCode, 200, taken.body);
    assert.deepEqual(await stored(app), [1e108]);
  } finally {
    await done();
  }
});

test('the JSON route: a value of 1.79e308 or -1e400 (Infinity once parsed) is a coded 400, and the whole put is refused', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app);
    const headers = { ...vm.auth, 'content-type': 'application/json' };
    const big = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers,
      payload: JSON.stringify({
        samples: [
          { metric_name: 'CPU', value: 1 },
          { metric_name: 'CPU', value: 1.79e308 },
        ],
      }),
    });
    assert.equal(big.statusCode, 400, big.body);
    assert.equal(errorCode(big), 'ERR_METRIC_INVALID');
    assert.match(big.body, /sample 1 value 1\.79e\+308 is outside the range/);
    // JSON has no Infinity, but a parser reads an exponent this large as one.
    const infinite = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers,
      payload: '{"samples": [{"metric_name": "CPU", "value": -1e400}]}',
    });
    assert.equal(infinite.statusCode, 400, infinite.body);
    assert.match(errorCode(infinite), /^ERR_(METRIC|REQUEST)_INVALID$/);
    assert.deepEqual(await stored(app), []);
  } finally {
    await done();
  }
});

test('rows of 1.79e308 stored before the check are skipped: an Average alarm is judged on the other samples, never Infinity', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app);
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: {
        name: 'cpu',
        metric_name: 'CPU',
        statistic: 'Average',
        period: 60,
        threshold: 80,
        comparison_operator: 'GreaterThanThreshold',
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const put = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: vm.auth,
      payload: { samples: [{ metric_name: 'CPU', value: 10 }] },
    });
    assert.equal(put.statusCode, 200, put.body);
    // As an older hearth stored them: straight into the table, past today's check.
    const time = new Date().toISOString();
    const old = {
      project_id: 'default',
      server_id: vm.id,
      namespace: 'system/linux',
      metric_name: 'CPU',
      unit: null,
      dimensions: '{}',
      time,
    };
    await app.services.store.write(({ trx }) =>
      trx
        .insertInto('metric_samples')
        .values([
          { ...old, value: 1.79e308 },
          { ...old, value: 1.79e308 },
          { ...old, value: -1.79e308 },
        ])
        .execute(),
    );
    await app.services.alarmEvaluator.runOnce();
    const alarm = (await app.inject({ url: '/v1/default/alarms/cpu', headers: ADMIN })).json<{ alarm: Alarm }>().alarm;
    assert.equal(alarm.state, 'OK', alarm.state_reason);
    assert.match(alarm.state_reason, /most recent 10$/);
  } finally {
    await done();
  }
});
