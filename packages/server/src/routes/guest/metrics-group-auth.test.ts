import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { signV2 } from '@hearth/protocol/signing';
import { ADMIN, errorCode, testApp } from '../../test-support.ts';

const HOST = '127.0.0.1:8003';
const GROUPS = '/v1/default/stacks/web/scaling_groups';

async function server(app: FastifyInstance, name: string) {
  const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name } });
  assert.equal(reply.statusCode, 201, reply.body);
  const body = reply.json<{ server: { id: string }; credential: { token: string; access_key_id: string; secret_access_key: string } }>();
  return { id: body.server.id, auth: { authorization: `Bearer ${body.credential.token}` }, ...body.credential };
}

const cpu = (group: string, value = 95) => ({
  namespace: 'system/linux',
  samples: [{ metric_name: 'CPUUtilization', value, unit: 'Percent', dimensions: { AutoScalingGroupName: group } }],
});

/** A PutMetricData form as cfn-push-stats (boto, signature v2) sends it, claiming `group`. */
function putMetricData(app: FastifyInstance, key: string, secret: string, group: string) {
  const params: Record<string, string> = {
    Action: 'PutMetricData',
    Version: '2010-08-01',
    AWSAccessKeyId: key,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
    Timestamp: new Date().toISOString(),
    Namespace: 'system/linux',
    'MetricData.member.1.MetricName': 'CPUUtilization',
    'MetricData.member.1.Value': '95',
    'MetricData.member.1.Dimensions.member.1.Name': 'AutoScalingGroupName',
    'MetricData.member.1.Dimensions.member.1.Value': group,
  };
  params.Signature = signV2(secret, 'sha256', 'POST', HOST, '/v1/', params);
  return app.inject({
    method: 'POST',
    url: '/v1/',
    headers: { host: HOST, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    payload: new URLSearchParams(params).toString(),
  });
}

test("a server may not send samples for a scaling group it is not a member of (they would drive that group's alarms)", async () => {
  const { app, done } = await testApp();
  try {
    const member = await server(app, 'web-1');
    const intruder = await server(app, 'batch-1');
    assert.equal(
      (await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } })).statusCode,
      201,
    );
    // min_size 0: no initial change to deliver, so no actuator is called.
    const group = await app.inject({
      method: 'POST',
      url: GROUPS,
      headers: ADMIN,
      payload: { name: 'workers', min_size: 0, max_size: 3, actuator: { url: 'http://127.0.0.1:9/scale' } },
    });
    assert.equal(group.statusCode, 201, group.body);
    const added = await app.inject({ method: 'POST', url: `${GROUPS}/workers/members`, headers: ADMIN, payload: { add: [member.id] } });
    assert.equal(added.statusCode, 200, added.body);

    const json = await app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: intruder.auth, payload: cpu('workers') });
    assert.equal(json.statusCode, 403, json.body);
    assert.equal(errorCode(json), 'ERR_AUTH_FORBIDDEN');
    assert.match(json.json().error.message, /not a member of scaling group workers/);
    // One sample for another group spoils the whole put: nothing of it is stored.
    const mixed = {
      samples: [
        { metric_name: 'Heartbeat', value: 1 },
        { metric_name: 'CPUUtilization', value: 99, dimensions: { AutoScalingGroupName: 'workers' } },
      ],
    };
    assert.equal((await app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: intruder.auth, payload: mixed })).statusCode, 403);
    const form = await putMetricData(app, intruder.access_key_id, intruder.secret_access_key, 'workers');
    assert.equal(form.statusCode, 403, form.body);
    assert.match(form.body, /<Code>AccessDenied<\/Code>/);
    assert.match(form.body, /ERR_AUTH_FORBIDDEN/);
    const listed = async () =>
      (await app.inject({ url: '/v1/default/metrics', headers: ADMIN })).json<{ samples: Array<{ server_id: string; value: number }> }>()
        .samples;
    assert.deepEqual(await listed(), [], 'nothing refused was stored');

    // The member sends for its group; a name no group holds (a group outside hearth) is anyone's.
    assert.equal(
      (await app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: member.auth, payload: cpu('workers', 50) })).statusCode,
      200,
    );
    assert.equal((await putMetricData(app, member.access_key_id, member.secret_access_key, 'workers')).statusCode, 200);
    assert.equal(
      (await app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: intruder.auth, payload: cpu('elsewhere', 1) })).statusCode,
      200,
    );
    assert.deepEqual(
      (await listed()).map((s) => [s.server_id, s.value]),
      [
        [intruder.id, 1],
        [member.id, 95],
        [member.id, 50],
      ],
    );

    // Removed from the group, the server speaks for it no more.
    await app.inject({ method: 'POST', url: `${GROUPS}/workers/members`, headers: ADMIN, payload: { remove: [member.id] } });
    const removed = await app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: member.auth, payload: cpu('workers') });
    assert.equal(removed.statusCode, 403, removed.body);
  } finally {
    await done();
  }
});

test("a server may not send samples naming another server as its InstanceId (they would drive that server's alarms)", async () => {
  const { app, done } = await testApp();
  try {
    const victim = await server(app, 'web-1');
    const intruder = await server(app, 'web-2');
    const samples = (instance: string) => ({
      samples: [
        { metric_name: 'Heartbeat', value: 1 },
        { metric_name: 'CPUUtilization', value: 99, dimensions: { InstanceId: instance } },
      ],
    });
    const spoofed = await app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: intruder.auth, payload: samples(victim.id) });
    assert.equal(spoofed.statusCode, 403, spoofed.body);
    assert.equal(errorCode(spoofed), 'ERR_AUTH_FORBIDDEN');
    assert.match(spoofed.json().error.message, new RegExp(`InstanceId=${victim.id}, another server's id`));
    const stored = await app.inject({ url: '/v1/default/metrics', headers: ADMIN });
    assert.deepEqual(stored.json(), { samples: [] }, 'nothing of the refused put is stored');

    // Its own id, and an instance id hearth does not know (a Nova uuid from nova_meta.json), are its to send.
    for (const instance of [intruder.id, '0b7c1a8e-58a4-4e6c-a5c4-0d5a1c7e2f10']) {
      const own = await app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: intruder.auth, payload: samples(instance) });
      assert.equal(own.statusCode, 200, own.body);
    }
    const kept = (await app.inject({ url: '/v1/default/metrics', headers: ADMIN })).json<{ samples: Array<{ server_id: string }> }>();
    assert.equal(kept.samples.length, 4);
    assert.ok(kept.samples.every((sample) => sample.server_id === intruder.id));
  } finally {
    await done();
  }
});
