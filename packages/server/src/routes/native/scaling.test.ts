import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ActuatorWebhook, ScalingGroup, ScalingPolicy } from '@hearth/protocol';
import { ADMIN, errorCode, injectUrl, testApp, alertmanagerBody } from '../../test-support.ts';
import { verifyActuatorSignature } from '../../domain/scaling-webhook.ts';

/** A loopback actuator: records each POST; `status()` decides the reply. */
async function receiver(status: () => number = () => 200) {
  const received: Array<{ body: ActuatorWebhook; raw: string; headers: IncomingHttpHeaders }> = [];
  const server: Server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    request.on('end', () => {
      const code = status();
      if (code >= 200 && code < 300) received.push({ body: JSON.parse(raw) as ActuatorWebhook, raw, headers: request.headers });
      response.writeHead(code).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function until(check: () => boolean | Promise<boolean>, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const GROUPS = '/v1/default/stacks/web/scaling_groups';
const POLICIES = '/v1/default/stacks/web/scaling_policies';

async function setup(app: FastifyInstance, actuatorUrl: string, group: Record<string, unknown> = {}) {
  assert.equal(
    (await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } })).statusCode,
    201,
  );
  const created = await app.inject({
    method: 'POST',
    url: GROUPS,
    headers: ADMIN,
    payload: {
      name: 'workers',
      min_size: 1,
      max_size: 2,
      cooldown: 60,
      actuator: { url: actuatorUrl, secret: 'actuator-secret-0123' },
      ...group,
    },
  });
  assert.equal(created.statusCode, 201, created.body);
  return created.json<{ scaling_group: ScalingGroup; actuator_secret: string | null }>();
}

async function policy(app: FastifyInstance, body: Record<string, unknown> = {}): Promise<ScalingPolicy> {
  const created = await app.inject({
    method: 'POST',
    url: POLICIES,
    headers: ADMIN,
    payload: { name: 'up', group: 'workers', adjustment_type: 'change_in_capacity', scaling_adjustment: 1, ...body },
  });
  assert.equal(created.statusCode, 201, created.body);
  return created.json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
}

const show = async (app: FastifyInstance) =>
  (await app.inject({ url: `${GROUPS}/workers`, headers: ADMIN })).json<{ scaling_group: ScalingGroup }>().scaling_group;

const firing = alertmanagerBody;

test('groups: Heat validation, clamped updates, members, signed initial delivery, delete refused while policies exist', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    const { scaling_group: group, actuator_secret: secret } = await setup(app, actuator.url);
    assert.equal(secret, null, 'a given secret is never echoed');
    assert.equal(group.desired_capacity, 1);
    assert.equal(group.current_size, 0);
    await until(() => actuator.received.length === 1);
    const first = actuator.received[0]!;
    assert.equal(first.body.previous_capacity, 0);
    assert.equal(first.body.desired_capacity, 1);
    assert.equal(first.body.sequence, 1);
    assert.equal(first.body.reason, 'initial capacity');
    assert.equal(first.body.group.stack_name, 'web');
    const signed = { signature: first.headers['x-hearth-signature'] as string, timestamp: first.headers['x-hearth-timestamp'] as string };
    assert.match(signed.signature, /^sha256=[0-9a-f]{64}$/);
    assert.equal(verifyActuatorSignature('actuator-secret-0123', signed, first.raw), true);
    assert.equal(verifyActuatorSignature('wrong-secret-000000', signed, first.raw), false);
    await until(async () => (await show(app)).deliveries.delivered === 1);

    const bad = async (payload: Record<string, unknown>, url = GROUPS) => {
      const reply = await app.inject({ method: 'POST', url, headers: ADMIN, payload });
      assert.equal(reply.statusCode, 400, reply.body);
      return reply.json<{ error: { code: string; message: string } }>().error;
    };
    const base = { name: 'other', actuator: { url: actuator.url } };
    assert.match((await bad({ ...base, min_size: 3, max_size: 2 })).message, /max_size 2 is smaller than min_size 3/);
    assert.match((await bad({ ...base, min_size: 1, max_size: 2, desired_capacity: 5 })).message, /desired_capacity 5 is outside/);
    const metadata = await bad({ ...base, min_size: 0, max_size: 1, actuator: { url: 'http://169.254.169.254/latest' } });
    assert.equal(metadata.code, 'ERR_SCALING_GROUP_INVALID');
    assert.match(metadata.message, /link-local/);
    const clash = await app.inject({
      method: 'POST',
      url: GROUPS,
      headers: ADMIN,
      payload: { ...base, name: 'workers', min_size: 0, max_size: 1 },
    });
    assert.equal(errorCode(clash), 'ERR_RESOURCE_EXISTS');
    const generated = await app.inject({ method: 'POST', url: GROUPS, headers: ADMIN, payload: { ...base, min_size: 0, max_size: 1 } });
    assert.equal(generated.statusCode, 201);
    assert.equal(typeof generated.json().actuator_secret, 'string');
    assert.equal(generated.json().scaling_group.desired_capacity, 0, 'initial capacity = min_size');

    // Raising min above the desired capacity clamps it up, and the actuator hears of it.
    const updated = await app.inject({ method: 'PATCH', url: `${GROUPS}/workers`, headers: ADMIN, payload: { min_size: 2, max_size: 3 } });
    assert.equal(updated.statusCode, 200, updated.body);
    assert.equal(updated.json().scaling_group.desired_capacity, 2);
    await until(() => actuator.received.length === 2);
    assert.deepEqual([actuator.received[1]!.body.previous_capacity, actuator.received[1]!.body.desired_capacity], [1, 2]);
    const outside = await app.inject({ method: 'PATCH', url: `${GROUPS}/workers`, headers: ADMIN, payload: { desired_capacity: 9 } });
    assert.equal(errorCode(outside), 'ERR_SCALING_GROUP_INVALID');

    const unknown = await app.inject({ method: 'POST', url: `${GROUPS}/workers/members`, headers: ADMIN, payload: { add: ['nope'] } });
    assert.equal(errorCode(unknown), 'ERR_SERVER_NOT_FOUND');
    const vm = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'vm1', id: 'vm-1' } });
    assert.equal(vm.statusCode, 201);
    const added = await app.inject({
      method: 'POST',
      url: `${GROUPS}/workers/members`,
      headers: ADMIN,
      payload: { add: ['vm-1', 'vm-1'] },
    });
    assert.equal(added.json().scaling_group.current_size, 1);
    const members = await app.inject({ url: `${GROUPS}/workers/members`, headers: ADMIN });
    assert.deepEqual(
      members.json().members.map((m: { server_id: string; bootstrap: boolean }) => [m.server_id, m.bootstrap]),
      [['vm-1', false]],
    );
    const removed = await app.inject({ method: 'POST', url: `${GROUPS}/workers/members`, headers: ADMIN, payload: { remove: ['vm-1'] } });
    assert.equal(removed.json().scaling_group.current_size, 0);

    await policy(app);
    const refused = await app.inject({ method: 'DELETE', url: `${GROUPS}/workers`, headers: ADMIN });
    assert.equal(refused.statusCode, 409);
    assert.equal(errorCode(refused), 'ERR_SCALING_GROUP_HAS_POLICIES');
    assert.equal((await app.inject({ method: 'DELETE', url: `${POLICIES}/up`, headers: ADMIN })).statusCode, 204);
    assert.equal((await app.inject({ method: 'DELETE', url: `${GROUPS}/workers`, headers: ADMIN })).statusCode, 204);
    assert.equal(errorCode(await app.inject({ url: `${GROUPS}/workers`, headers: ADMIN })), 'ERR_SCALING_GROUP_NOT_FOUND');
  } finally {
    await done();
    await actuator.close();
  }
});

test('policies: the alarm URL takes Alertmanager and Aodh payloads; cooldown, resolved, max_size, rotate, revoke and expiry', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    await setup(app, actuator.url, { cooldown: 1 });
    const wrongStep = await app.inject({
      method: 'POST',
      url: POLICIES,
      headers: ADMIN,
      payload: { name: 'p', group: 'workers', adjustment_type: 'change_in_capacity', scaling_adjustment: 1, min_adjustment_step: 2 },
    });
    assert.equal(errorCode(wrongStep), 'ERR_SCALING_POLICY_INVALID');
    const noGroup = await app.inject({
      method: 'POST',
      url: POLICIES,
      headers: ADMIN,
      payload: { name: 'p', group: 'nope', adjustment_type: 'change_in_capacity', scaling_adjustment: 1 },
    });
    assert.equal(errorCode(noGroup), 'ERR_SCALING_GROUP_NOT_FOUND');
    const up = await policy(app);
    assert.match(
      up.alarm_url!,
      /^http:\/\/127\.0\.0\.1:9\/v1\/signal\/arn%3Aopenstack%3Aheat%3A%3Adefault%3Astacks\/web\/[0-9a-f-]{36}\/resources\/up\?.*Signature=/,
    );
    assert.match(up.signal_token!, /^hk1\./);
    assert.equal(up.revoked, false);

    assert.equal((await injectUrl(app, 'POST', up.alarm_url!, firing())).statusCode, 200);
    let group = await show(app);
    assert.equal(group.desired_capacity, 2);
    assert.match(group.cooldown_reason ?? '', /change_in_capacity : 1/);
    // Inside the cooldown: acknowledged, recorded, nothing changes.
    assert.equal((await injectUrl(app, 'POST', up.alarm_url!, firing())).statusCode, 200);
    assert.equal((await show(app)).desired_capacity, 2);
    const events = await app.inject({ url: '/v1/default/events?type=scaling_group.cooldown', headers: ADMIN });
    assert.equal(events.json().events.length, 1);
    assert.match(events.json().events[0].message, /HighLoad firing .* in cooldown until/);
    // Resolved: recorded, never acted on.
    const resolved = await app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN, payload: firing('resolved') });
    assert.equal(resolved.json().result.outcome, 'ignored');
    await new Promise((r) => setTimeout(r, 1100));
    // After the cooldown: 2 + 1 is clamped to max_size 2, so nothing changes.
    const atMax = await app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN, payload: firing() });
    assert.equal(atMax.json().result.outcome, 'no_change');
    // The native signal URL with its token, an Aodh body.
    const down = await policy(app, { name: 'down', scaling_adjustment: -50, adjustment_type: 'percent_change_in_capacity' });
    const aodh = { alarm_name: 'cpu_low', previous: 'ok', current: 'alarm', reason: 'cpu < 10' };
    const viaToken = await injectUrl(app, 'POST', down.signal_url!, aodh, {
      'x-auth-token': down.signal_token!,
      'content-type': 'application/json',
    });
    assert.equal(viaToken.statusCode, 200, viaToken.body);
    group = await show(app);
    assert.equal(group.desired_capacity, 1);
    assert.match(group.last_activity?.reason ?? '', /policy down: cpu_low: alarm state changed from ok to alarm \(cpu < 10\)/);
    await until(() => actuator.received.length === 3);
    assert.deepEqual(
      actuator.received.map((r) => [r.body.sequence, r.body.desired_capacity]),
      [
        [1, 1],
        [2, 2],
        [3, 1],
      ],
    );
    // A policy's credential reaches only that policy.
    const foreign = await injectUrl(app, 'POST', up.signal_url!, {}, { 'x-auth-token': down.signal_token! });
    assert.equal(foreign.statusCode, 403);

    // Rotate: the old URL and token stop at once, the new ones work.
    const rotated = (await app.inject({ method: 'POST', url: `${POLICIES}/up/rotate`, headers: ADMIN })).json()
      .scaling_policy as ScalingPolicy;
    assert.notEqual(rotated.alarm_url, up.alarm_url);
    assert.match((await injectUrl(app, 'POST', up.alarm_url!, firing())).body, /ERR_SIGNED_URL_INVALID/);
    assert.equal((await injectUrl(app, 'POST', up.signal_url!, {}, { 'x-auth-token': up.signal_token! })).statusCode, 401);
    assert.equal((await injectUrl(app, 'POST', rotated.alarm_url!, firing())).statusCode, 200);
    // Revoke: 403, and the policy shows no URLs.
    const revoked = (await app.inject({ method: 'POST', url: `${POLICIES}/up/revoke`, headers: ADMIN })).json()
      .scaling_policy as ScalingPolicy;
    assert.equal(revoked.revoked, true);
    assert.equal(revoked.alarm_url, null);
    const gone = await injectUrl(app, 'POST', rotated.alarm_url!, firing());
    assert.equal(gone.statusCode, 403);
    assert.match(gone.body, /InvalidClientTokenId.*ERR_SIGNED_URL_INVALID/s);
    // An expiring URL.
    const short = (
      await app.inject({ method: 'POST', url: `${POLICIES}/up/rotate`, headers: ADMIN, payload: { url_expires_in: 1 } })
    ).json().scaling_policy as ScalingPolicy;
    assert.ok(short.expires_at);
    await new Promise((r) => setTimeout(r, 1100));
    assert.match((await injectUrl(app, 'POST', short.alarm_url!, firing())).body, /ERR_SIGNED_URL_EXPIRED/);
    const listed = await app.inject({ url: POLICIES, headers: ADMIN });
    assert.deepEqual(
      listed.json().scaling_policies.map((p: ScalingPolicy) => [p.name, p.group, p.last_signal?.outcome ?? null]),
      [
        ['down', 'workers', 'adjusted'],
        // Its last signal (through the rotated URL) came inside the cooldown of `down`.
        ['up', 'workers', 'cooldown'],
      ],
    );
  } finally {
    await done();
    await actuator.close();
  }
});

test('act_only_on_alarm; plain-text manual signals; a lapsed "in progress" lease does not block, a live one does', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    await setup(app, actuator.url, { max_size: 5, cooldown: 0 });
    await policy(app, { act_only_on_alarm: true });
    const signal = (payload: unknown, headers: Record<string, string> = ADMIN) =>
      app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers, payload: payload as string });
    const ok = await signal({ alarm_name: 'x', previous: 'alarm', current: 'ok' });
    assert.equal(ok.json().result.outcome, 'ignored');
    const plain = await signal('scale up please', { ...ADMIN, 'content-type': 'text/plain' });
    assert.equal(plain.statusCode, 200, plain.body);
    assert.equal(plain.json().result.outcome, 'adjusted');
    assert.match(plain.json().result.reason, /Signal: scale up please/);
    assert.equal((await show(app)).desired_capacity, 2);

    const store = app.services.store;
    const group = await show(app);
    // A crash left the flag behind an hour ago: the lease has lapsed and the group scales.
    const past = new Date(Date.now() - 3600_000).toISOString();
    await store.write(({ trx }) =>
      trx.updateTable('scaling_groups').set({ scaling_lease_id: 'dead', scaling_lease_until: past }).where('id', '=', group.id).execute(),
    );
    assert.equal((await signal(undefined)).json().result.outcome, 'adjusted');
    // A live lease (a change being applied right now) blocks, and says so.
    const future = new Date(Date.now() + 30_000).toISOString();
    await store.write(({ trx }) =>
      trx.updateTable('scaling_groups').set({ scaling_lease_id: 'live', scaling_lease_until: future }).where('id', '=', group.id).execute(),
    );
    assert.equal((await show(app)).scaling_in_progress, true);
    const blocked = (await signal(undefined)).json().result;
    assert.equal(blocked.outcome, 'in_progress');
    assert.equal(blocked.desired_capacity, 3);
  } finally {
    await done();
    await actuator.close();
  }
});

test('member_bootstrap: new members get server records and working agent credentials in the webhook', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    await setup(app, actuator.url, { min_size: 0, max_size: 3, desired_capacity: 0, member_bootstrap: {} });
    await policy(app, { adjustment_type: 'exact_capacity', scaling_adjustment: 2 });
    const result = (await app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN })).json().result;
    assert.equal(result.outcome, 'adjusted');
    const group = await show(app);
    assert.equal(group.current_size, 2);
    assert.ok(group.members.every((m) => m.bootstrap));
    await until(() => actuator.received.length === 1);
    const hook = actuator.received[0]!.body;
    assert.equal(hook.new_members.length, 2);
    assert.deepEqual(
      hook.members,
      group.members.map((m) => m.server_id),
    );
    for (const member of hook.new_members) {
      assert.ok(member.credential);
      assert.equal(member.credential.token, `${member.credential.access_key_id}:${member.credential.secret_access_key}`);
      assert.match(member.os_collect_config_conf ?? '', /collectors = hearth/);
      const metadata = await app.inject({ url: '/v1/guest/metadata', headers: { authorization: `Bearer ${member.credential.token}` } });
      assert.equal(metadata.statusCode, 200, 'the credential in the webhook works');
    }
    // Credentials are derived when sent, never kept in the outbox.
    const stored = await app.services.store.reader.selectFrom('actuator_deliveries').select('payload').execute();
    assert.ok(stored.every((row) => !row.payload.includes(hook.new_members[0]!.credential!.secret_access_key)));
  } finally {
    await done();
    await actuator.close();
  }
});

test('member_bootstrap: a group whose name holds a dot scales up (members are named with a dash instead)', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    await setup(app, actuator.url, { name: 'web.tier', min_size: 0, max_size: 3, desired_capacity: 0, member_bootstrap: {} });
    await policy(app, { group: 'web.tier', adjustment_type: 'exact_capacity', scaling_adjustment: 2 });
    const signalled = await app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN });
    assert.equal(signalled.statusCode, 200, signalled.body);
    assert.equal(signalled.json().result.outcome, 'adjusted');
    const group = (await app.inject({ url: `${GROUPS}/web.tier`, headers: ADMIN })).json<{ scaling_group: ScalingGroup }>().scaling_group;
    assert.equal(group.current_size, 2);
    const servers = (await app.inject({ url: '/v1/default/servers', headers: ADMIN })).json<{
      servers: Array<{ id: string; name: string }>;
    }>().servers;
    const members = servers.filter((s) => group.members.some((m) => m.server_id === s.id));
    assert.equal(members.length, 2);
    for (const member of members) assert.match(member.name, /^web-tier-[0-9a-f]{8}$/);
  } finally {
    await done();
    await actuator.close();
  }
});

test('a receiver that fails gets every change again, in order, with the failures shown on the group', async () => {
  const { app, done } = await testApp();
  let down = true;
  const actuator = await receiver(() => (down ? 503 : 200));
  try {
    await setup(app, actuator.url, { max_size: 5, cooldown: 0 });
    await policy(app);
    for (let i = 0; i < 3; i++) await app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN });
    await until(async () => (await show(app)).deliveries.failed === 1);
    const waiting = await show(app);
    assert.equal(waiting.desired_capacity, 4);
    assert.equal(waiting.deliveries.pending, 4);
    assert.match(waiting.deliveries.last_error ?? '', /HTTP 503/);
    assert.equal(actuator.received.length, 0);
    down = false;
    await until(() => actuator.received.length === 4);
    assert.deepEqual(
      actuator.received.map((r) => [r.body.sequence, r.body.desired_capacity]),
      [
        [1, 1],
        [2, 2],
        [3, 3],
        [4, 4],
      ],
    );
    await until(async () => (await show(app)).deliveries.pending === 0);
    assert.equal((await show(app)).deliveries.delivered, 4);
  } finally {
    await done();
    await actuator.close();
  }
});

// A reason is clipped to 500 characters: clipped between the halves of an emoji, the reply carried
// a lone surrogate (invalid UTF-8 for strict clients) while the store kept U+FFFD in its place.
test('a signal reason clipped at an emoji keeps the emoji whole: the reply is what is stored, no lone surrogate', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    await setup(app, actuator.url, { max_size: 5, cooldown: 0 });
    await policy(app);
    // "Signal: " + 490 characters puts the emoji's two halves at characters 498 and 499, where the clip falls.
    const text = `${'x'.repeat(490)}😀tail`;
    const reply = await app.inject({
      method: 'POST',
      url: `${POLICIES}/up/signal`,
      headers: { ...ADMIN, 'content-type': 'text/plain' },
      payload: text,
    });
    assert.equal(reply.statusCode, 200, reply.body);
    assert.doesNotMatch(reply.body, /\\ud83d(?!\\ude00)/i, 'no lone high surrogate escaped in the reply');
    const result = reply.json<{ result: { outcome: string; reason: string } }>().result;
    assert.equal(result.outcome, 'adjusted');
    assert.match(result.reason, /x…: desired capacity 1 -> 2$/);
    const group = await show(app);
    assert.equal(`${group.last_activity?.reason}: desired capacity 1 -> 2`, result.reason, 'the stored reason is the one answered');
  } finally {
    await done();
    await actuator.close();
  }
});
