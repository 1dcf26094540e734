import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type TestServer } from '../../../test/helpers/server.ts';
import { createTransport } from './http.ts';
import { normalizeClientOptions } from './options.ts';
import { createClient } from './client.ts';
import { HearthApiError } from './errors.ts';
import { scalingMethods, type ScalingMethods } from './scaling.ts';

// The scaling methods against a real hearth-server on 127.0.0.1, in this process.

let server: TestServer;
let scaling: ScalingMethods;

before(async () => {
  server = await startServer();
  scaling = scalingMethods(createTransport(normalizeClientOptions({ url: server.url, token: server.token })));
  await createClient({ url: server.url, token: server.token }).createStack({ stack_name: 'web' });
});
after(() => server.close());

test('groups and policies round trip: create, list, update, members, signal, rotate, revoke, delete', async () => {
  // Port 9 (discard) refuses: deliveries just stay pending, which is all this test needs.
  const created = await scaling.createScalingGroup('web', {
    name: 'workers',
    min_size: 1,
    max_size: 3,
    actuator: { url: 'http://127.0.0.1:9/x' },
  });
  assert.equal(created.scaling_group.desired_capacity, 1);
  assert.equal(typeof created.actuator_secret, 'string');
  assert.deepEqual(
    (await scaling.listScalingGroups('web')).map((g) => g.name),
    ['workers'],
  );
  assert.equal((await scaling.updateScalingGroup('web', 'workers', { min_size: 2 })).desired_capacity, 2);
  assert.deepEqual(await scaling.listScalingMembers('web', 'workers'), []);
  const policy = await scaling.createScalingPolicy('web', {
    name: 'up',
    group: 'workers',
    adjustment_type: 'percent_change_in_capacity',
    scaling_adjustment: 10,
    min_adjustment_step: 1,
  });
  assert.ok(policy.alarm_url);
  assert.deepEqual(
    (await scaling.listScalingPolicies('web')).map((p) => p.name),
    ['up'],
  );
  const result = await scaling.signalScalingPolicy('web', 'up', { alarm: 'cpu', state: 'ALARM' });
  assert.deepEqual([result.outcome, result.previous_capacity, result.desired_capacity], ['adjusted', 2, 3]);
  assert.equal((await scaling.signalScalingPolicy('web', 'up')).outcome, 'no_change');
  const rotated = await scaling.rotateScalingPolicy('web', 'up', { url_expires_in: 60 });
  assert.notEqual(rotated.alarm_url, policy.alarm_url);
  assert.ok(rotated.expires_at);
  assert.equal((await scaling.revokeScalingPolicy('web', 'up')).alarm_url, null);
  assert.equal((await scaling.getScalingPolicy('web', 'up')).revoked, true);
  await assert.rejects(
    scaling.deleteScalingGroup('web', 'workers'),
    (error: unknown) => error instanceof HearthApiError && error.code === 'ERR_SCALING_GROUP_HAS_POLICIES',
  );
  await scaling.deleteScalingPolicy('web', 'up');
  await scaling.deleteScalingGroup('web', 'workers');
  await assert.rejects(
    scaling.getScalingGroup('web', 'workers'),
    (error: unknown) => error instanceof HearthApiError && error.status === 404 && error.code === 'ERR_SCALING_GROUP_NOT_FOUND',
  );
});

test('a bad group is a coded 400 with the reason', async () => {
  await assert.rejects(
    scaling.createScalingGroup('web', { name: 'bad', min_size: 3, max_size: 1, actuator: { url: 'http://127.0.0.1:9/x' } }),
    (error: unknown) =>
      error instanceof HearthApiError && error.code === 'ERR_SCALING_GROUP_INVALID' && /smaller than min_size/.test(error.message),
  );
});
