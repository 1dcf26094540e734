import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { WaitCondition } from '@hearth/protocol';
import { ADMIN, errorCode, injectUrl, testApp } from '../../test-support.ts';

async function stackWithCondition(app: FastifyInstance, body: Record<string, unknown> = {}) {
  const stack = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  assert.equal(stack.statusCode, 201, stack.body);
  const created = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/web/wait_conditions',
    headers: ADMIN,
    payload: { name: 'ready', count: 3, timeout: 600, ...body },
  });
  assert.equal(created.statusCode, 201, created.body);
  return created.json<{ wait_condition: WaitCondition }>().wait_condition;
}

const show = async (app: FastifyInstance, name = 'ready') =>
  (await app.inject({ url: `/v1/default/stacks/web/wait_conditions/${name}`, headers: ADMIN })).json<{ wait_condition: WaitCondition }>()
    .wait_condition;

test('stacks: create with Heat ids and ARN, duplicate name 409, 302 from the bare name, delete', async () => {
  const { app, done } = await testApp();
  try {
    const created = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    assert.equal(created.statusCode, 201);
    const stack = created.json().stack;
    assert.match(stack.id, /^[0-9a-f-]{36}$/);
    assert.equal(stack.arn, `arn:openstack:heat::default:stacks/web/${stack.id}`);
    const again = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    assert.equal(again.statusCode, 409);
    assert.equal(errorCode(again), 'ERR_STACK_EXISTS');
    const bad = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'a/b' } });
    assert.equal(bad.statusCode, 400);
    const redirect = await app.inject({ url: '/v1/default/stacks/web', headers: ADMIN });
    assert.equal(redirect.statusCode, 302);
    assert.equal(redirect.headers.location, `/v1/default/stacks/web/${stack.id}`);
    const shown = await app.inject({ url: `/v1/default/stacks/web/${stack.id}`, headers: ADMIN });
    assert.equal(shown.json().stack.id, stack.id);
    const listed = await app.inject({ url: '/v1/default/stacks', headers: ADMIN });
    assert.deepEqual(
      listed.json().stacks.map((s: { stack_name: string }) => s.stack_name),
      ['web'],
    );
    const deleted = await app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN });
    assert.equal(deleted.statusCode, 204);
    const gone = await app.inject({ url: `/v1/default/stacks/web/${stack.id}`, headers: ADMIN });
    assert.equal(errorCode(gone), 'ERR_STACK_NOT_FOUND');
  } finally {
    await done();
  }
});

test('a stack with a server in it cannot be deleted; resource names are unique in a stack', async () => {
  const { app, done } = await testApp();
  try {
    await stackWithCondition(app);
    const clash = await app.inject({
      method: 'POST',
      url: '/v1/default/servers',
      headers: ADMIN,
      payload: { name: 'ready', stack: 'web' },
    });
    assert.equal(clash.statusCode, 409);
    assert.equal(errorCode(clash), 'ERR_RESOURCE_EXISTS');
    const server = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'vm1', stack: 'web' } });
    assert.equal(server.statusCode, 201, server.body);
    assert.equal(server.json().server.stack_name, 'web');
    assert.equal(server.json().server.resource_name, 'vm1');
    const refused = await app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN });
    assert.equal(refused.statusCode, 409);
    assert.equal(errorCode(refused), 'ERR_STACK_NOT_EMPTY');
    assert.equal((await show(app)).status, 'IN_PROGRESS');
  } finally {
    await done();
  }
});

test('wait condition: count 3 completes after three signals on the native handle; a repeated id replaces', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app);
    assert.equal(condition.status, 'IN_PROGRESS');
    assert.match(condition.handle.curl_cli, /^curl -i -X POST -H 'X-Auth-Token: hk1\./);
    const token = { 'x-auth-token': condition.handle.token, 'content-type': 'application/json' };
    const send = (body: unknown) => injectUrl(app, 'POST', condition.handle.endpoint, body, token);
    assert.equal((await send({ status: 'SUCCESS', id: 'vm1', data: 'one' })).statusCode, 200);
    assert.equal((await send({ status: 'SUCCESS', id: 'vm1', data: 'one again' })).statusCode, 200);
    let state = await show(app);
    assert.equal(state.received, 1);
    assert.deepEqual(state.data, { vm1: 'one again' });
    // Heat's defaults: an empty body is a SUCCESS with the next number as its id.
    assert.equal(
      (await injectUrl(app, 'POST', condition.handle.endpoint, undefined, { 'x-auth-token': condition.handle.token })).statusCode,
      200,
    );
    assert.equal((await show(app)).status, 'IN_PROGRESS');
    assert.equal((await send({ status: 'SUCCESS', id: 'vm3', data: { port: 80 } })).statusCode, 200);
    state = await show(app);
    assert.equal(state.status, 'COMPLETE');
    assert.deepEqual(state.data, { vm1: 'one again', '2': null, vm3: { port: 80 } });
    // Done: a late signal is refused with a code and changes nothing.
    const late = await send({ status: 'FAILURE', id: 'vm4' });
    assert.equal(late.statusCode, 409);
    assert.equal(errorCode(late), 'ERR_WAIT_CONDITION_DONE');
    assert.deepEqual((await show(app)).data, state.data);
  } finally {
    await done();
  }
});

test('wait condition: the same signal again is acknowledged and changes nothing, even once done; ids without a number are not swallowed', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app, { count: 2 });
    const token = { 'x-auth-token': condition.handle.token, 'content-type': 'application/json' };
    const send = (body: unknown) => injectUrl(app, 'POST', condition.handle.endpoint, body, token);
    const events = async () =>
      (await app.inject({ url: '/v1/default/events?limit=1000', headers: ADMIN })).json<{ events: unknown[] }>().events.length;
    // An explicit id "2", then anonymous signals: Heat would number the next one "2" again.
    assert.equal((await send({ status: 'SUCCESS', id: '2', data: 'two' })).statusCode, 200);
    const before = await events();
    assert.equal((await send({ status: 'SUCCESS', id: '2', data: 'two' })).statusCode, 200, 'a retry is acknowledged');
    assert.equal(await events(), before, 'a retry writes no event');
    assert.equal((await send({})).statusCode, 200);
    const state = await show(app);
    assert.equal(state.status, 'COMPLETE', 'the anonymous signal counted as the second');
    assert.deepEqual(state.data, { '2': 'two', '3': null });
    // Done: the last signal again (its answer lost) is acknowledged; anything else is refused.
    const retry = await send({ status: 'SUCCESS', id: '2', data: 'two' });
    assert.equal(retry.statusCode, 200, retry.body);
    const changed = await send({ status: 'SUCCESS', id: '2', data: 'changed' });
    assert.equal(changed.statusCode, 409);
    assert.equal(errorCode(changed), 'ERR_WAIT_CONDITION_DONE');
    assert.deepEqual((await show(app)).data, state.data);
  } finally {
    await done();
  }
});

test('wait condition: one FAILURE fails it at once (Heat), unless max_failures tolerates it', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app);
    const token = { 'x-auth-token': condition.handle.token };
    await injectUrl(app, 'POST', condition.handle.endpoint, { status: 'FAILURE', reason: 'disk full' }, token);
    const failed = await show(app);
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.status_reason, 'WaitConditionFailure: disk full');

    const tolerant = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/wait_conditions',
      headers: ADMIN,
      payload: { name: 'tolerant', count: 2, timeout: 600, max_failures: 1 },
    });
    const handle = tolerant.json().wait_condition.handle;
    await injectUrl(app, 'POST', handle.endpoint, { status: 'FAILURE', reason: 'flaky' }, { 'x-auth-token': handle.token });
    assert.equal((await show(app, 'tolerant')).status, 'IN_PROGRESS');
    await injectUrl(app, 'POST', handle.endpoint, { status: 'SUCCESS' }, { 'x-auth-token': handle.token });
    assert.equal((await show(app, 'tolerant')).status, 'COMPLETE');
  } finally {
    await done();
  }
});

test('wait condition: bad bodies are a 400 with a reason and change nothing', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app);
    const token = { 'x-auth-token': condition.handle.token };
    for (const body of [{ status: 'DONE' }, { status: 'SUCCESS', extra: 1 }, '[1,2]', '{"status": ']) {
      const reply = await injectUrl(app, 'POST', condition.handle.endpoint, body, token);
      assert.equal(reply.statusCode, 400, `${JSON.stringify(body)} -> ${reply.body}`);
    }
    const cfn = await injectUrl(app, 'PUT', condition.handle.cfn_url, { Status: 'SUCCESS', Reason: 'r' });
    assert.equal(cfn.statusCode, 400);
    assert.match(cfn.body, /<Code>InvalidParameterValue<\/Code>/);
    assert.match(cfn.body, /UniqueId/);
    const empty = await injectUrl(app, 'PUT', condition.handle.cfn_url);
    assert.equal(empty.statusCode, 400);
    assert.equal((await show(app)).received, 0);
  } finally {
    await done();
  }
});

test('wait condition: the CFN handle URL takes cfn-signal bodies; a tampered or revoked URL is a 403', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app, { count: 1 });
    const tampered = condition.handle.cfn_url.replace(/Signature=([^&])/, (_m: string, c: string) => `Signature=${c === 'A' ? 'B' : 'A'}`);
    const denied = await injectUrl(app, 'PUT', tampered, { Status: 'SUCCESS', Reason: 'ok', UniqueId: 'vm1', Data: 'x' });
    assert.equal(denied.statusCode, 403);
    assert.match(denied.body, /<ErrorResponse><Error><Type>Sender<\/Type><Code>AccessDenied<\/Code>/);
    const ok = await injectUrl(app, 'PUT', condition.handle.cfn_url, { Status: 'SUCCESS', Reason: 'ok', UniqueId: 'vm1', Data: 'x' });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.body, '<resource>ready</resource>');
    assert.deepEqual((await show(app)).data, { vm1: 'x' });

    // The condition's URL may reach only this condition: aim it at another one's ARN.
    const other = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/wait_conditions',
      headers: ADMIN,
      payload: { name: 'other', timeout: 60 },
    });
    const otherHandle = other.json().wait_condition.handle;
    const foreign = await injectUrl(app, 'POST', otherHandle.endpoint, {}, { 'x-auth-token': condition.handle.token });
    assert.equal(foreign.statusCode, 403);
    assert.equal((await show(app, 'other')).received, 0);

    assert.equal(
      (await app.inject({ method: 'DELETE', url: '/v1/default/stacks/web/wait_conditions/other', headers: ADMIN })).statusCode,
      204,
    );
    const revoked = await injectUrl(app, 'POST', otherHandle.signal_url, {});
    assert.equal(revoked.statusCode, 403);
    const revokedToken = await injectUrl(app, 'POST', otherHandle.endpoint, {}, { 'x-auth-token': otherHandle.token });
    assert.equal(revokedToken.statusCode, 401);
    // No server is involved: the message must not send its reader to register one.
    assert.doesNotMatch(revokedToken.body, /register the server/);
    assert.match(revokedToken.json<{ error: { message: string } }>().error.message, /revoked with what it was issued for/);
  } finally {
    await done();
  }
});

test('wait condition: expiring URLs are refused after their expiry', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app, { url_expires_in: 1 });
    assert.ok(condition.handle.expires_at);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const reply = await injectUrl(app, 'PUT', condition.handle.cfn_url, { Status: 'SUCCESS', Reason: 'ok', UniqueId: 'vm1', Data: 'x' });
    assert.equal(reply.statusCode, 403);
    assert.match(reply.body, /expired/);
    assert.equal((await show(app)).received, 0);
  } finally {
    await done();
  }
});

test('wait condition: times out with a reason; a heartbeat extends the deadline', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app, { timeout: 1, count: 2 });
    await injectUrl(app, 'POST', condition.handle.endpoint, { reason: 'vm1 up' }, { 'x-auth-token': condition.handle.token });
    const beat = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/wait_conditions/ready/heartbeat',
      headers: ADMIN,
      payload: { extend: 3 },
    });
    assert.equal(beat.statusCode, 200, beat.body);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    assert.equal((await show(app)).status, 'IN_PROGRESS', 'the heartbeat moved the deadline');
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const timedOut = await show(app);
    assert.equal(timedOut.status, 'FAILED');
    assert.equal(timedOut.status_reason, 'WaitConditionTimeout: 1 of 2 received - vm1 up');
  } finally {
    await done();
  }
});

test('wait condition long-poll: held until a signal lands, then 200 with the new state; 304 when nothing changes', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app);
    const first = await app.inject({ url: '/v1/default/stacks/web/wait_conditions/ready', headers: ADMIN });
    const etag = first.headers.etag as string;
    const quiet = await app.inject({
      url: '/v1/default/stacks/web/wait_conditions/ready?wait=1',
      headers: { ...ADMIN, 'if-none-match': etag },
    });
    assert.equal(quiet.statusCode, 304);
    const started = Date.now();
    const held = app.inject({ url: '/v1/default/stacks/web/wait_conditions/ready?wait=20', headers: { ...ADMIN, 'if-none-match': etag } });
    setTimeout(() => void injectUrl(app, 'POST', condition.handle.endpoint, {}, { 'x-auth-token': condition.handle.token }), 100);
    const changed = await held;
    assert.equal(changed.statusCode, 200);
    assert.equal(changed.json().wait_condition.received, 1);
    assert.notEqual(changed.headers.etag, etag);
    assert.ok(Date.now() - started < 5000, 'woken by the signal, not the wait');
  } finally {
    await done();
  }
});

test('wait condition GET: If-None-Match takes a list, weak tags and *, on the plain GET and the long-poll', async () => {
  const { app, done } = await testApp();
  try {
    await stackWithCondition(app);
    const url = '/v1/default/stacks/web/wait_conditions/ready';
    const etag = (await app.inject({ url, headers: ADMIN })).headers.etag as string;
    for (const header of [`"other", ${etag}`, `W/${etag}`, '*']) {
      const reply = await app.inject({ url, headers: { ...ADMIN, 'if-none-match': header } });
      assert.equal(reply.statusCode, 304, header);
      const started = Date.now();
      const held = await app.inject({ url: `${url}?wait=1`, headers: { ...ADMIN, 'if-none-match': header } });
      assert.equal(held.statusCode, 304, header);
      assert.ok(Date.now() - started >= 900, `${header}: held for the wait, not answered at once`);
    }
    const stale = await app.inject({ url, headers: { ...ADMIN, 'if-none-match': '"other", W/"stale"' } });
    assert.equal(stale.statusCode, 200);
    assert.equal(stale.json().wait_condition.name, 'ready');
  } finally {
    await done();
  }
});

test('wait condition: a NUL in a signal id or reason never costs the signal; shown as \\u0000, the same on every store', async () => {
  const { app, done } = await testApp();
  try {
    const condition = await stackWithCondition(app, { count: 1 });
    const body = { status: 'SUCCESS', reason: 'up\u0000now', id: 'vm\u00001', data: 'd\u0000' };
    const auth = { 'x-auth-token': condition.handle.token };
    const signal = await injectUrl(app, 'POST', condition.handle.endpoint, body, auth);
    assert.equal(signal.statusCode, 200, signal.body);
    assert.equal((await injectUrl(app, 'POST', condition.handle.endpoint, body, auth)).statusCode, 200, 'a retry is acknowledged');
    const shown = await show(app);
    assert.equal(shown.status, 'COMPLETE');
    assert.deepEqual(shown.data, { 'vm\\u00001': 'd\u0000' }, 'data keeps its NUL: it is stored as JSON');
    assert.deepEqual(
      shown.signals.map((s) => [s.id, s.reason]),
      [['vm\\u00001', 'up\\u0000now']],
    );
  } finally {
    await done();
  }
});

test('scaling groups share the stack: a stack with a group cannot be deleted, and their names are taken', async () => {
  const { app, done } = await testApp();
  try {
    await stackWithCondition(app);
    const group = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_groups',
      headers: ADMIN,
      payload: { name: 'workers', min_size: 1, max_size: 2, actuator: { url: 'http://127.0.0.1:9/actuator' } },
    });
    assert.equal(group.statusCode, 201, group.body);
    const clash = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/wait_conditions',
      headers: ADMIN,
      payload: { name: 'workers', timeout: 60 },
    });
    assert.equal(errorCode(clash), 'ERR_RESOURCE_EXISTS');
    const refused = await app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN });
    assert.equal(errorCode(refused), 'ERR_STACK_NOT_EMPTY');
    assert.equal((await app.inject({ url: '/v1/default/stacks/web/scaling_groups/workers', headers: ADMIN })).statusCode, 200);
  } finally {
    await done();
  }
});
