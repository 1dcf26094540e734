import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Alarm, AlarmNotification } from '@hearth/protocol';
import { signV2 } from '@hearth/protocol/signing';
import { buildApp } from '../../packages/server/src/app.ts';
import { testStore } from '../../packages/server/src/test-support.ts';
import { freePort, TEST_SECRET_KEY } from '../helpers/server.ts';

/** A loopback receiver recording every POST (path, headers, JSON body). */
async function receiver() {
  const posts: Array<{ path: string; headers: Record<string, unknown>; body: Record<string, unknown> }> = [];
  const server: Server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      posts.push({ path: request.url ?? '', headers: request.headers, body: JSON.parse(text || '{}') as Record<string, unknown> });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts, close: () => server.close() };
}

/**
 * PutMetricData exactly as cfn-push-stats' boto client sends it to the CloudWatch endpoint: a
 * form POST to /v1/ with every parameter, signature v2 included, in the body.
 */
async function putMetricData(base: string, key: string, secret: string, value: number, instanceId: string): Promise<Response> {
  const host = new URL(base).host;
  const params: Record<string, string> = {
    Action: 'PutMetricData',
    Version: '2010-08-01',
    Namespace: 'system/linux',
    'MetricData.member.1.MetricName': 'CPUUtilization',
    'MetricData.member.1.Unit': 'Percent',
    'MetricData.member.1.Value': String(value),
    'MetricData.member.1.Dimensions.member.1.Name': 'InstanceId',
    'MetricData.member.1.Dimensions.member.1.Value': instanceId,
    'MetricData.member.1.Dimensions.member.2.Name': 'AutoScalingGroupName',
    'MetricData.member.1.Dimensions.member.2.Value': 'web-asg',
    AWSAccessKeyId: key,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
    Timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  params.Signature = signV2(secret, 'sha256', 'POST', host, '/v1/', params);
  return fetch(`${base}/v1/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' },
    body: new URLSearchParams(params).toString(),
  });
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const PERIOD_S = 3;
/** How long the test waits for a change whose timing it does not check: many evaluations (a loaded machine is slow). */
const SETTLE_MS = 10 * PERIOD_S * 1000;

test('cfn-push-stats-style PutMetricData above a threshold moves an alarm to ALARM within one period; its actions fire once per state change and drive a scaling policy', async () => {
  const storage = await testStore('hearth-e2e-alarms-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const token = 'test-admin-token';
  const app = await buildApp({
    dataDir: storage.dataDir,
    databaseUrl: storage.databaseUrl,
    adminToken: token,
    secretKey: TEST_SECRET_KEY,
    publicUrl: base,
    alarms: { evaluator: { schedule: '* * * * * *', leaseSeconds: 5 } },
  });
  await app.listen({ host: '127.0.0.1', port });
  const hook = await receiver();
  const actuator = await receiver();
  const admin = { 'x-auth-token': token, 'content-type': 'application/json' };
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}/v1/default${path}`, {
      method,
      headers: admin,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    assert.ok(response.status < 300, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  let pushing: NodeJS.Timeout | undefined;
  try {
    const vm = await api('POST', '/servers', { name: 'web-1' });
    const credential = vm.credential as { access_key_id: string; secret_access_key: string };
    const serverId = (vm.server as { id: string }).id;

    await api('POST', '/stacks', { stack_name: 'web' });
    await api('POST', '/stacks/web/scaling_groups', {
      name: 'web-asg',
      min_size: 1,
      max_size: 3,
      actuator: { url: `${actuator.url}/resize` },
    });
    // As the provisioner reports it: only a member's samples may name the group.
    await api('POST', '/stacks/web/scaling_groups/web-asg/members', { add: [serverId] });
    const policy = (await api('POST', '/stacks/web/scaling_policies', {
      name: 'scale-up',
      group: 'web-asg',
      adjustment_type: 'change_in_capacity',
      scaling_adjustment: 1,
      act_only_on_alarm: true,
    })) as { scaling_policy: { alarm_url: string } };
    const desired = async () =>
      ((await api('GET', '/stacks/web/scaling_groups/web-asg')).scaling_group as { desired_capacity: number }).desired_capacity;
    assert.equal(await desired(), 1);

    await api('POST', '/alarms', {
      name: 'cpu-high',
      metric_name: 'CPUUtilization',
      dimensions: { AutoScalingGroupName: 'web-asg' },
      statistic: 'Average',
      period: PERIOD_S,
      evaluation_periods: 1,
      threshold: 80,
      comparison_operator: 'GreaterThanThreshold',
      alarm_actions: [policy.scaling_policy.alarm_url, `${hook.url}/alarm`],
      ok_actions: [`${hook.url}/ok`],
      insufficient_data_actions: [`${hook.url}/insufficient`],
    });
    const state = async () => ((await api('GET', '/alarms/cpu-high')).alarm as Alarm).state;

    const push = (value: number) => {
      clearInterval(pushing);
      const send = () =>
        void putMetricData(base, credential.access_key_id, credential.secret_access_key, value, serverId).then((r) =>
          assert.equal(r.status, 200),
        );
      send();
      pushing = setInterval(send, 300);
    };

    // Above the threshold: ALARM within one period.
    const firstSample = Date.now();
    push(95);
    await until('ALARM', PERIOD_S * 1000, async () => ((await state()) === 'ALARM' ? true : undefined));
    assert.ok(Date.now() - firstSample <= PERIOD_S * 1000, 'within one evaluation period');
    // The policy's alarm_url took the Aodh-shaped body: the group goes 1 -> 2 and the actuator hears of it.
    await until('desired capacity 2', SETTLE_MS, async () => ((await desired()) === 2 ? true : undefined));
    await until('the actuator webhook', SETTLE_MS, async () => (actuator.posts.length > 0 ? true : undefined));
    assert.equal(actuator.posts[0]!.path, '/resize');

    // Still above for several more evaluations: no further action.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(await state(), 'ALARM');
    assert.equal(await desired(), 2, 'the policy was signalled once');
    assert.deepEqual(
      hook.posts.map((p) => p.path),
      ['/alarm'],
    );
    const notification = hook.posts[0]!.body as unknown as AlarmNotification;
    assert.equal(notification.alarm_name, 'cpu-high');
    assert.equal(notification.previous, 'insufficient data');
    assert.equal(notification.current, 'alarm');
    assert.equal(hook.posts[0]!.headers['content-type'], 'application/json');

    // Back below: OK, its action once.
    push(10);
    await until('OK', SETTLE_MS, async () => ((await state()) === 'OK' ? true : undefined));
    await until('the ok action', SETTLE_MS, async () => (hook.posts.length === 2 ? true : undefined));

    // Silence: no datapoint in the period, INSUFFICIENT_DATA, its action once.
    clearInterval(pushing);
    await until('INSUFFICIENT_DATA', SETTLE_MS, async () => ((await state()) === 'INSUFFICIENT_DATA' ? true : undefined));
    await until('the insufficient-data action', SETTLE_MS, async () => (hook.posts.length === 3 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.deepEqual(
      hook.posts.map((p) => `${p.path} ${String(p.body.previous)} -> ${String(p.body.current)}`),
      ['/alarm insufficient data -> alarm', '/ok alarm -> ok', '/insufficient ok -> insufficient data'],
    );
    assert.equal(await desired(), 2, 'OK and INSUFFICIENT_DATA were not sent to the policy');

    const history = (await api('GET', '/alarms/cpu-high/history')).history as Array<{ previous: string; current: string }>;
    assert.deepEqual(
      history.map((h) => `${h.previous}->${h.current}`),
      ['OK->INSUFFICIENT_DATA', 'ALARM->OK', 'INSUFFICIENT_DATA->ALARM'],
    );
    const samples = (await api('GET', '/metrics?metric_name=CPUUtilization&limit=1')).samples as Array<{ server_id: string }>;
    assert.equal(samples[0]!.server_id, serverId, 'samples are attributed to the signing server');
  } finally {
    clearInterval(pushing);
    await app.close();
    hook.close();
    actuator.close();
    await storage.remove();
  }
});
