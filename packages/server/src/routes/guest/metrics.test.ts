import { test } from 'node:test';
import { createHash, createHmac } from 'node:crypto';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { signV2 } from '@hearth/protocol/signing';
import { ADMIN, errorCode, registerServer, testApp } from '../../test-support.ts';
import { SIGNED_HOST, signedMetricForm } from '../../test-support-wire.ts';

const HOST = SIGNED_HOST;

const memory = (value: string) => ({
  Namespace: 'system/linux',
  'MetricData.member.1.MetricName': 'MemoryUtilization',
  'MetricData.member.1.Unit': 'Percent',
  'MetricData.member.1.Value': value,
  'MetricData.member.1.Dimensions.member.1.Name': 'AutoScalingGroupName',
  'MetricData.member.1.Dimensions.member.1.Value': 'web',
});

const postForm = (app: FastifyInstance, payload: string, query = '') =>
  app.inject({
    method: 'POST',
    url: `/v1/${query}`,
    headers: { host: HOST, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    payload,
  });

async function credentialOf(app: FastifyInstance, name = 'vm') {
  const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name } });
  const body = reply.json<{ server: { id: string }; credential: { access_key_id: string; secret_access_key: string } }>();
  return { serverId: body.server.id, key: body.credential.access_key_id, secret: body.credential.secret_access_key };
}

test('PutMetricData signed with a server credential (v2, form body) stores the samples against that server', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await credentialOf(app);
    const reply = await postForm(app, signedMetricForm(vm.key, vm.secret, memory('91.5')));
    assert.equal(reply.statusCode, 200, reply.body);
    assert.match(reply.headers['content-type'] as string, /xml/);
    assert.match(reply.body, /^<PutMetricDataResponse xmlns="http:\/\/monitoring\.amazonaws\.com\/doc\/2010-08-01\/">/);
    const json = await postForm(app, signedMetricForm(vm.key, vm.secret, { ...memory('12'), ContentType: 'JSON' }));
    assert.equal(json.statusCode, 200, json.body);
    assert.ok(json.json().PutMetricDataResponse);
    const listed = await app.inject({ url: '/v1/default/metrics?metric_name=MemoryUtilization', headers: ADMIN });
    const samples = listed.json().samples as Array<Record<string, unknown>>;
    assert.deepEqual(samples.map((s) => [s.value, s.unit, s.server_id, s.namespace, s.dimensions]).sort(), [
      [12, 'Percent', vm.serverId, 'system/linux', { AutoScalingGroupName: 'web' }],
      [91.5, 'Percent', vm.serverId, 'system/linux', { AutoScalingGroupName: 'web' }],
    ]);
  } finally {
    await done();
  }
});

/** Signs a form POST to /v1/ with SigV4 as boto does (Authorization header, the form body hashed). */
function sigV4Headers(key: string, secret: string, body: string, date = new Date()): Record<string, string> {
  const amzDate = date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/RegionOne/monitoring/aws4_request`;
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const canonical = ['POST', '/v1/', '', `host:${HOST}\nx-amz-date:${amzDate}\n`, 'host;x-amz-date', sha256(body)].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const signingKey = [day, 'RegionOne', 'monitoring', 'aws4_request'].reduce<Buffer>(
    (k, part) => createHmac('sha256', k).update(part).digest(),
    Buffer.from(`AWS4${secret}`),
  );
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  return {
    'x-amz-date': amzDate,
    authorization: `AWS4-HMAC-SHA256 Credential=${key}/${scope},SignedHeaders=host;x-amz-date,Signature=${signature}`,
  };
}

test('PutMetricData also comes signed with SigV4 (boto 2 against a CloudWatch endpoint) or with v2 in the query string', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await credentialOf(app);
    const body = new URLSearchParams({ Action: 'PutMetricData', Version: '2010-08-01', ...memory('55') }).toString();
    const v4 = await app.inject({
      method: 'POST',
      url: '/v1/',
      headers: { host: HOST, 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8', ...sigV4Headers(vm.key, vm.secret, body) },
      payload: body,
    });
    assert.equal(v4.statusCode, 200, v4.body);
    const tampered = await app.inject({
      method: 'POST',
      url: '/v1/',
      headers: { host: HOST, 'content-type': 'application/x-www-form-urlencoded', ...sigV4Headers(vm.key, vm.secret, body) },
      payload: body.replace('Value=55', 'Value=56'),
    });
    assert.equal(tampered.statusCode, 403);
    const inQuery = await app.inject({
      method: 'POST',
      url: `/v1/?${signedMetricForm(vm.key, vm.secret, memory('66'))}`,
      headers: { host: HOST },
    });
    assert.equal(inQuery.statusCode, 200, inQuery.body);
    const listed = await app.inject({ url: '/v1/default/metrics', headers: ADMIN });
    assert.deepEqual(
      listed
        .json()
        .samples.map((sample: { value: number }) => sample.value)
        .sort(),
      [55, 66],
    );
  } finally {
    await done();
  }
});

test('PutMetricData is refused when tampered, unsigned, untimed, stale, from a non-server credential, or malformed', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await credentialOf(app);
    const tampered = signedMetricForm(vm.key, vm.secret, memory('10')).replace('Value=10', 'Value=99');
    const bad = await postForm(app, tampered);
    assert.equal(bad.statusCode, 403);
    assert.match(bad.body, /<Code>AccessDenied<\/Code>/);
    assert.match(bad.body, /ERR_SIGNED_URL_INVALID/);

    const unsigned = await postForm(app, new URLSearchParams({ Action: 'PutMetricData', ...memory('1') }).toString());
    assert.equal(unsigned.statusCode, 400, 'as DescribeStackResource answers it');
    assert.match(unsigned.body, /<Code>IncompleteSignature<\/Code>/);

    const untimed: Record<string, string> = { Action: 'PutMetricData', AWSAccessKeyId: vm.key, SignatureVersion: '2', ...memory('1') };
    untimed.Signature = signV2(vm.secret, 'sha256', 'POST', HOST, '/v1/', untimed);
    const noTime = await postForm(app, new URLSearchParams(untimed).toString());
    assert.equal(noTime.statusCode, 403);
    assert.match(noTime.body, /must carry a Timestamp/);

    const stale = await postForm(app, signedMetricForm(vm.key, vm.secret, memory('1'), new Date(Date.now() - 3600_000).toISOString()));
    assert.equal(stale.statusCode, 403);
    assert.match(stale.body, /sign it again/);

    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 's' } });
    const wc = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/s/wait_conditions',
      headers: ADMIN,
      payload: { name: 'ready', timeout: 60 },
    });
    const handle = new URL(wc.json().wait_condition.handle.signal_url as string);
    const wcKey = handle.searchParams.get('AWSAccessKeyId')!;
    const wcSecret = app.services.guestCredentials.secretOf(wcKey);
    const foreign = await postForm(app, signedMetricForm(wcKey, wcSecret, memory('1')));
    assert.equal(foreign.statusCode, 403);
    assert.match(foreign.body, /not a wait_condition/);

    const noValue = await postForm(app, signedMetricForm(vm.key, vm.secret, { 'MetricData.member.1.MetricName': 'X' }));
    assert.equal(noValue.statusCode, 400);
    assert.match(noValue.body, /ERR_METRIC_INVALID/);

    const other = await postForm(app, signedMetricForm(vm.key, vm.secret, { Action: 'ListMetrics' }));
    assert.equal(other.statusCode, 400);
    assert.match(other.body, /DescribeStackResource and PutMetricData/);

    const listed = await app.inject({ url: '/v1/default/metrics', headers: ADMIN });
    assert.deepEqual(listed.json().samples, [], 'nothing refused was stored');
  } finally {
    await done();
  }
});

test('form parsing stays on the CFN action route: a JSON body labelled form-urlencoded (curl -d) is JSON elsewhere', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app, 'vm1');
    const reply = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: { ...vm.auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: '{"samples": [{"metric_name": "Heartbeat", "value": 1}]}',
    });
    assert.equal(reply.statusCode, 200, reply.body);
    assert.deepEqual(reply.json(), { stored: 1 });
  } finally {
    await done();
  }
});

test('native metrics: POST /v1/guest/metrics with the agent credential; others refused; bad samples 400', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app, 'vm1');
    const put = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: vm.auth,
      payload: {
        namespace: 'MyApp',
        samples: [
          { metric_name: 'QueueDepth', value: 7, unit: 'Count', dimensions: { queue: 'jobs' } },
          { metric_name: 'Heartbeat', value: 1, namespace: 'system/linux' },
        ],
      },
    });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(put.json(), { stored: 2 });
    const listed = await app.inject({ url: '/v1/default/metrics?namespace=MyApp', headers: ADMIN });
    const [sample] = listed.json().samples;
    assert.equal(sample.server_id, vm.id);
    assert.deepEqual(sample.dimensions, { queue: 'jobs' });
    assert.equal(sample.value, 7);

    const operator = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: ADMIN,
      payload: { samples: [{ metric_name: 'X', value: 1 }] },
    });
    assert.equal(operator.statusCode, 403);
    const anonymous = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      payload: { samples: [{ metric_name: 'X', value: 1 }] },
    });
    assert.equal(anonymous.statusCode, 401);
    const old = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: vm.auth,
      payload: {
        samples: [
          { metric_name: 'X', value: 1 },
          { metric_name: 'X', value: 2, timestamp: '2001-01-01T00:00:00Z' },
        ],
      },
    });
    assert.equal(old.statusCode, 400);
    assert.equal(errorCode(old), 'ERR_METRIC_INVALID');
    assert.match(old.json().error.message, /sample 1 has timestamp 2001/);
    const wrongType = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: vm.auth,
      payload: { samples: [{ metric_name: 'X', value: '1' }] },
    });
    assert.equal(wrongType.statusCode, 400);
    const agentList = await app.inject({ url: '/v1/default/metrics', headers: vm.auth });
    assert.equal(agentList.statusCode, 403, 'agents do not read metrics');
    const all = await app.inject({ url: '/v1/default/metrics', headers: ADMIN });
    assert.equal(all.json().samples.length, 2, 'the refused put stored nothing');
  } finally {
    await done();
  }
});

test('a timestamp of the right shape but no real date (month 13, hour 99) is a coded 400 on put and list, and stores nothing', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app, 'vm1');
    const put = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: vm.auth,
      payload: {
        samples: [
          { metric_name: 'X', value: 1 },
          { metric_name: 'X', value: 2, timestamp: '2026-13-45T99:99:99Z' },
        ],
      },
    });
    assert.equal(put.statusCode, 400, put.body);
    assert.equal(errorCode(put), 'ERR_METRIC_INVALID');
    assert.match(put.json().error.message, /sample 1 has timestamp 2026-13-45T99:99:99Z, which is not a date and time/);
    const listed = await app.inject({ url: '/v1/default/metrics?since=2026-13-45T99:99:99Z', headers: ADMIN });
    assert.equal(listed.statusCode, 400, listed.body);
    assert.equal(errorCode(listed), 'ERR_REQUEST_INVALID');
    const all = await app.inject({ url: '/v1/default/metrics', headers: ADMIN });
    assert.deepEqual(all.json().samples, [], 'the refused put stored nothing');
  } finally {
    await done();
  }
});

test('PutMetricData with an empty namespace or control characters is a CloudWatch XML 400 naming the parameter; nothing stored', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await credentialOf(app);
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ ...memory('1'), Namespace: '' }, /Namespace is empty/],
      [{ ...memory('1'), 'MetricData.member.1.MetricName': 'Memory\nUtilization' }, /MetricData\.member\.1\.MetricName .*U\+000A/],
      [{ ...memory('1'), 'MetricData.member.1.Dimensions.member.1.Value': 'web\u001b[2J' }, /Dimensions\.member\.1\.Value .*U\+001B/],
      [{ ...memory('0x10') }, /MetricData\.member\.1\.Value "0x10" is not a number/],
    ];
    for (const [params, reason] of cases) {
      const reply = await postForm(app, signedMetricForm(vm.key, vm.secret, params));
      assert.equal(reply.statusCode, 400, reply.body);
      assert.match(reply.headers['content-type'] as string, /xml/);
      assert.match(reply.body, /^<ErrorResponse><Error><Type>Sender<\/Type><Code>InvalidParameterValue<\/Code><Message>/);
      assert.match(reply.body, reason);
      assert.match(reply.body, /ERR_METRIC_INVALID/);
    }
    const listed = await app.inject({ url: '/v1/default/metrics', headers: ADMIN });
    assert.deepEqual(listed.json().samples, [], 'nothing refused was stored');
  } finally {
    await done();
  }
});

test('native metrics: control characters in a unit or dimension are a coded 400 naming the field; nothing stored', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app, 'vm1');
    const put = (sample: Record<string, unknown>) =>
      app.inject({
        method: 'POST',
        url: '/v1/guest/metrics',
        headers: vm.auth,
        payload: { samples: [{ metric_name: 'CPU', value: 1 }, sample] },
      });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ metric_name: 'CPU', value: 1, unit: 'Per\u0000cent' }, /sample 1 unit "Per\\u0000cent" contains the control character U\+0000/],
      [{ metric_name: 'CPU', value: 1, dimensions: { 'queue\n': 'jobs' } }, /sample 1 dimension name .*U\+000A/],
      [{ metric_name: 'CPU', value: 1, dimensions: { queue: 'jobs\u009b' } }, /sample 1 dimension queue .*U\+009B/],
    ];
    for (const [sample, reason] of cases) {
      const reply = await put(sample);
      assert.equal(reply.statusCode, 400, reply.body);
      assert.equal(errorCode(reply), 'ERR_METRIC_INVALID');
      assert.match(reply.json().error.message, reason);
    }
    const listed = await app.inject({ url: '/v1/default/metrics', headers: ADMIN });
    assert.deepEqual(listed.json().samples, [], 'the whole put is refused, its good sample too');
  } finally {
    await done();
  }
});

// cfn-push-stats --metric takes any name ("Disk Free"), and PutMetricData stores it: the native
// routes must let an operator list it and raise an alarm on it, not refuse the name as a pattern.
test('a metric or namespace PutMetricData stores ("Disk Free", "My App") can be listed and alarmed on through the native API', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await credentialOf(app);
    const form = { Namespace: 'My App', 'MetricData.member.1.MetricName': 'Disk Free', 'MetricData.member.1.Value': '42' };
    const stored = await postForm(app, signedMetricForm(vm.key, vm.secret, form));
    assert.equal(stored.statusCode, 200, stored.body);
    const listed = await app.inject({ url: `/v1/default/metrics?namespace=My%20App&metric_name=Disk%20Free`, headers: ADMIN });
    assert.equal(listed.statusCode, 200, listed.body);
    assert.deepEqual(
      (listed.json().samples as Array<{ value: number }>).map((s) => s.value),
      [42],
    );
    const alarm = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: {
        name: 'disk-low',
        namespace: 'My App',
        metric_name: 'Disk Free',
        statistic: 'Average',
        period: 60,
        threshold: 10,
        comparison_operator: 'LessThanThreshold',
      },
    });
    assert.equal(alarm.statusCode, 201, alarm.body);
    const control = await app.inject({ url: '/v1/default/metrics?metric_name=Disk%0AFree', headers: ADMIN });
    assert.equal(control.statusCode, 400, control.body);
  } finally {
    await done();
  }
});
