import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

/** Counts what reaches the store from now on: write units, and reads of the config and deployment tables. */
function storeSpy(app: FastifyInstance): { writes: () => number; reads: () => string[] } {
  const store = app.services.store;
  const write = store.write.bind(store);
  const selectFrom = store.reader.selectFrom.bind(store.reader);
  let writes = 0;
  const reads: string[] = [];
  store.write = (unit) => {
    writes++;
    return write(unit);
  };
  store.reader.selectFrom = ((from: string) => {
    if (/software_(configs|deployments)/.test(String(from))) reads.push(String(from));
    return selectFrom(from as never);
  }) as typeof store.reader.selectFrom;
  return { writes: () => writes, reads: () => reads };
}

test('an id that is not a UUID is answered 404 as an unknown one, as Heat does, without reaching the store', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const server = await registerServer(app, 'vm');
    const configId = await createConfig(app);
    const deploymentId = await createDeployment(app, configId, server.id);
    const before = await Promise.all(
      [`/v1/default/software_configs/${configId}`, `/v1/default/software_deployments/${deploymentId}`].map(
        async (url) => (await app.inject({ url, headers: ADMIN })).body,
      ),
    );
    const spy = storeSpy(app);
    // (A path segment over 512 characters is refused before routing: 400 ERR_REQUEST_INVALID.)
    const long = 'x'.repeat(512);
    const cases: Array<[string, string, 'ERR_CONFIG_NOT_FOUND' | 'ERR_DEPLOYMENT_NOT_FOUND', string]> = [
      ['GET', '/v1/default/software_configs/nope', 'ERR_CONFIG_NOT_FOUND', 'nope'],
      ['DELETE', '/v1/default/software_configs/nope', 'ERR_CONFIG_NOT_FOUND', 'nope'],
      ['GET', `/v1/default/software_configs/${configId}x`, 'ERR_CONFIG_NOT_FOUND', `${configId}x`],
      ['GET', '/v1/default/software_configs?marker=nope', 'ERR_CONFIG_NOT_FOUND', 'nope'],
      ['GET', '/v1/default/software_deployments/nope', 'ERR_DEPLOYMENT_NOT_FOUND', 'nope'],
      ['GET', '/v1/default/software_deployments/nope?wait=5', 'ERR_DEPLOYMENT_NOT_FOUND', 'nope'],
      ['PUT', '/v1/default/software_deployments/nope', 'ERR_DEPLOYMENT_NOT_FOUND', 'nope'],
      ['DELETE', '/v1/default/software_deployments/nope', 'ERR_DEPLOYMENT_NOT_FOUND', 'nope'],
      ['GET', '/v1/default/software_deployments/nope/timeline', 'ERR_DEPLOYMENT_NOT_FOUND', 'nope'],
      ['GET', '/v1/default/software_deployments?marker=nope', 'ERR_DEPLOYMENT_NOT_FOUND', 'nope'],
      // Heat routes `…/metadata` without a server id to show(), as any other id.
      ['GET', '/v1/default/software_deployments/metadata', 'ERR_DEPLOYMENT_NOT_FOUND', 'metadata'],
      // Shown safely: control and bidi characters escaped, a long id cut to 64 characters.
      ['GET', '/v1/default/software_deployments/a%0Ab%1B%E2%80%AEc', 'ERR_DEPLOYMENT_NOT_FOUND', 'a\\u000ab\\u001b\\u202ec'],
      ['DELETE', `/v1/default/software_configs/${long}`, 'ERR_CONFIG_NOT_FOUND', `${'x'.repeat(64)}…`],
    ];
    for (const [method, url, code, shown] of cases) {
      const payload = method === 'PUT' ? { status: 'COMPLETE' } : undefined;
      const reply = await app.inject({ method: method as 'GET', url, headers: ADMIN, payload });
      const name = `${method} ${url.slice(0, 80)}`;
      assert.equal(reply.statusCode, 404, `${name}: ${reply.body.slice(0, 300)}`);
      assert.equal(errorCode(reply), code, name);
      assert.equal(reply.json().error.details.id, shown, name);
      assert.ok(reply.json().error.message.includes(` ${shown} `), name);
    }
    assert.deepEqual([spy.writes(), spy.reads()], [0, []], 'no malformed id reached the store');
    const unknown = await app.inject({ url: '/v1/default/software_deployments/00000000-0000-4000-8000-000000000000', headers: ADMIN });
    assert.equal(unknown.statusCode, 404);
    assert.deepEqual(spy.reads(), ['software_deployments'], 'a well-formed unknown id is looked up (the spy sees reads)');

    // Authentication still comes first, and bodies are still checked by their schemas.
    const unauthenticated = await app.inject({ url: '/v1/default/software_configs/nope' });
    assert.deepEqual([unauthenticated.statusCode, errorCode(unauthenticated)], [401, 'ERR_AUTH_MISSING']);
    const agent = await app.inject({ url: '/v1/default/software_deployments/nope', headers: server.auth });
    assert.deepEqual([agent.statusCode, errorCode(agent)], [403, 'ERR_AUTH_FORBIDDEN']);
    const badBody = await app.inject({
      method: 'PUT',
      url: '/v1/default/software_deployments/nope',
      headers: ADMIN,
      payload: { bogus: 1 },
    });
    assert.deepEqual([badBody.statusCode, errorCode(badBody)], [400, 'ERR_REQUEST_INVALID']);

    const after = await Promise.all(
      [`/v1/default/software_configs/${configId}`, `/v1/default/software_deployments/${deploymentId}`].map(
        async (url) => (await app.inject({ url, headers: ADMIN })).body,
      ),
    );
    assert.deepEqual(after, before, 'nothing stored changed');
  } finally {
    await done();
  }
});

test('deployments of a server id no deployment can have: none, as Heat answers for any unknown server', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const server = await registerServer(app, 'vm');
    const configId = await createConfig(app);
    const deploymentId = await createDeployment(app, configId, server.id);
    for (const id of ['bad%20server', '...', 'x'.repeat(65), '%00']) {
      const metadata = await app.inject({ url: `/v1/default/software_deployments/metadata/${id}`, headers: ADMIN });
      assert.deepEqual([metadata.statusCode, metadata.json()], [200, { metadata: [] }], id);
      const listed = await app.inject({ url: `/v1/default/software_deployments?server_id=${id}`, headers: ADMIN });
      assert.deepEqual([listed.statusCode, listed.json()], [200, { software_deployments: [] }], id);
    }
    // Heat filters only on a non-empty server_id: an empty one lists every deployment.
    const unfiltered = await app.inject({ url: '/v1/default/software_deployments?server_id=', headers: ADMIN });
    assert.deepEqual(
      unfiltered.json().software_deployments.map((d: { id: string }) => d.id),
      [deploymentId],
    );
    // An agent asking for another id is still refused, the id shown safely.
    const agent = await app.inject({ url: '/v1/default/software_deployments/metadata/a%0Ab', headers: server.auth });
    assert.deepEqual([agent.statusCode, errorCode(agent), agent.json().error.details.id], [404, 'ERR_SERVER_NOT_FOUND', 'a\\u000ab']);
    const own = await app.inject({ url: `/v1/default/software_deployments/metadata/${server.id}`, headers: server.auth });
    assert.equal(own.json().metadata.length, 1);
  } finally {
    await done();
  }
});

test('the lists ignore query parameters Heat does not know and still check limit and marker', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const server = await registerServer(app, 'vm');
    const [older, newer] = [await createConfig(app), await createConfig(app)];
    const [first, second] = [await createDeployment(app, older, server.id), await createDeployment(app, newer, server.id)];
    const listed = async (url: string, key: 'software_configs' | 'software_deployments') => {
      const reply = await app.inject({ url, headers: ADMIN });
      assert.equal(reply.statusCode, 200, reply.body.slice(0, 300));
      return reply.json<Record<string, Array<{ id: string }>>>()[key]?.map((item) => item.id);
    };

    // heatclient's software_configs.list(global_tenant=True) and any other keyword land in the query.
    assert.deepEqual(await listed('/v1/default/software_configs?global_tenant=True&sort_dir=asc&x=1&x=2&limit=1', 'software_configs'), [
      newer,
    ]);
    assert.deepEqual(
      await listed(
        `/v1/default/software_deployments?server_id=${server.id}&show_deleted=1&limit=1&marker=${first}`,
        'software_deployments',
      ),
      [second],
    );

    for (const url of [
      '/v1/default/software_configs?limit=x',
      '/v1/default/software_configs?limit=0&bogus=1',
      '/v1/default/software_deployments?limit=-1&bogus=1',
      `/v1/default/software_configs?marker=${'m'.repeat(65)}`,
      // An ignored value is still bounded.
      `/v1/default/software_deployments?bogus=${'b'.repeat(1025)}`,
    ]) {
      const reply = await app.inject({ url, headers: ADMIN });
      assert.deepEqual([reply.statusCode, errorCode(reply)], [400, 'ERR_REQUEST_INVALID'], url.slice(0, 80));
    }
  } finally {
    await done();
  }
});
