// A NUL character in text the operator gives: the same coded 400 on SQLite and PostgreSQL, naming
// the column, with nothing written. Runs on the test pass's store (both with HEARTH_TEST_POSTGRES_URL).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp, testStore } from '../test-support.ts';
import { HearthError } from '../domain/errors.ts';
import { bindParams, precompile } from './prepared-writes.ts';
import { openStore } from './store.ts';

function refusedField(reply: LightMyRequestResponse): unknown {
  assert.equal(reply.statusCode, 400, reply.body);
  assert.equal(errorCode(reply), 'ERR_REQUEST_INVALID');
  const error = reply.json<{ error: { message: string; details: { field?: unknown } } }>().error;
  assert.match(error.message, /contains a NUL character \(\\u0000\), which hearth does not store: remove it/);
  return error.details.field;
}

test('a NUL in a config name, server name or status reason is a 400 naming the field, and nothing is written', async (t) => {
  const { app, done } = await testApp();
  t.after(done);
  const config = await app.inject({
    method: 'POST',
    url: '/v1/default/software_configs',
    headers: ADMIN,
    payload: { name: 'a\u0000b', group: 'script', config: 'echo hi' },
  });
  assert.equal(refusedField(config), 'software_configs.name');
  const configs = await app.inject({ url: '/v1/default/software_configs', headers: ADMIN });
  assert.deepEqual(configs.json(), { software_configs: [] }, 'no config was stored');

  const server = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'vm\u0000' } });
  assert.equal(refusedField(server), 'servers.name');
  const servers = await app.inject({ url: '/v1/default/servers', headers: ADMIN });
  assert.deepEqual(servers.json(), { servers: [] }, 'no server was stored');

  const vm = await registerServer(app);
  const deployment = await createDeployment(app, await createConfig(app), vm.id);
  const events = async () =>
    (await app.inject({ url: `/v1/default/events?resource_id=${deployment}`, headers: ADMIN })).json<{ events: unknown[] }>().events;
  const eventsBefore = await events();
  const update = await app.inject({
    method: 'PUT',
    url: `/v1/default/software_deployments/${deployment}`,
    headers: ADMIN,
    payload: { status: 'COMPLETE', status_reason: 'done\u0000' },
  });
  assert.equal(refusedField(update), 'software_deployments.status_reason');
  const shown = await app.inject({ url: `/v1/default/software_deployments/${deployment}`, headers: ADMIN });
  assert.equal(shown.json().software_deployment.status, 'IN_PROGRESS', 'the deployment was not changed');
  assert.deepEqual(await events(), eventsBefore, 'no event was written');
});

test('a NUL inside a JSON value (config body, input default) is kept exactly', async (t) => {
  const { app, done } = await testApp();
  t.after(done);
  const created = await app.inject({
    method: 'POST',
    url: '/v1/default/software_configs',
    headers: ADMIN,
    payload: { name: 'ok', group: 'script', config: 'printf "a\u0000b"', inputs: [{ name: 'x', default: 'a\u0000' }] },
  });
  assert.equal(created.statusCode, 200, created.body);
  const id = created.json<{ software_config: { id: string } }>().software_config.id;
  const shown = (await app.inject({ url: `/v1/default/software_configs/${id}`, headers: ADMIN })).json().software_config;
  assert.equal(shown.config, 'printf "a\u0000b"');
  assert.equal(shown.inputs[0].default, 'a\u0000');
});

test('a NUL in a lookup value is the same 400 on both stores, not a 404 on one and a driver error on the other', async (t) => {
  const { app, done } = await testApp();
  t.after(done);
  const reply = await app.inject({ url: '/v1/default/stacks/ab%00c', headers: ADMIN });
  assert.equal(refusedField(reply), 'stacks.name');
});

test('a unit refused for a NUL after it wrote is rolled back whole; the rest of its batch commits', async (t) => {
  const storage = await testStore('hearth-nul-unit-');
  t.after(() => storage.remove());
  const store = openStore(storage);
  try {
    await store.migrate();
    const project = (id: string) => ({ id, name: id, created_at: new Date().toISOString() });
    // Queued in one turn: one group-commit batch.
    const [halfWritten, sibling] = await Promise.allSettled([
      store.write(async ({ trx }) => {
        await trx.insertInto('projects').values(project('written-first')).execute();
        await trx.insertInto('projects').values(project('then\u0000nul')).execute();
      }),
      store.write(async ({ trx }) => {
        await trx.insertInto('projects').values(project('sibling')).execute();
      }),
    ]);
    assert.equal(halfWritten.status, 'rejected');
    const error = halfWritten.reason as HearthError;
    assert.ok(error instanceof HearthError, String(error));
    assert.equal(error.statusCode, 400);
    assert.equal(error.details.field, 'projects.id');
    assert.equal(sibling.status, 'fulfilled');
    const ids = (await store.reader.selectFrom('projects').select('id').orderBy('id').execute()).map((row) => row.id);
    assert.deepEqual(ids, ['sibling'], 'the refused unit left nothing behind');
  } finally {
    await store.close();
  }
});

test('a prepared write refuses a NUL in a parameter, naming it', () => {
  const query = precompile<{ id: string; name: string }, unknown>((db, p) =>
    db.insertInto('projects').values({ id: p.id, name: p.name, created_at: '2026-01-01T00:00:00.000Z' }),
  );
  assert.deepEqual(bindParams(query, { id: 'p', name: 'n' }).slice(0, 2), ['p', 'n']);
  assert.throws(
    () => bindParams(query, { id: 'p', name: 'n\u0000' }),
    (error: HearthError) => error.statusCode === 400 && error.details.field === 'name',
  );
});
