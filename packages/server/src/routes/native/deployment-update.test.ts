import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

interface Entry {
  id: string;
  inputs: Array<{ name: string; value?: unknown }>;
}

const put = (app: FastifyInstance, id: string, payload: Record<string, unknown>) =>
  app.inject({ method: 'PUT', url: `/v1/default/software_deployments/${id}`, headers: ADMIN, payload });

const inputValue = (entry: Entry, name: string) => entry.inputs.find((i) => i.name === name)?.value;

test('PUT timeout: the agent document gets the new deploy_timeout (new ETag), as the native metadata shows it', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id, { timeout: 600 });
    const before = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(inputValue(before.json<{ deployments: Entry[] }>().deployments[0]!, 'deploy_timeout'), '600');

    const updated = await put(app, id, { timeout: 60 });
    assert.equal(updated.statusCode, 200, updated.body);
    const after = await app.inject({
      url: '/v1/guest/metadata',
      headers: { ...server.auth, 'if-none-match': String(before.headers.etag) },
    });
    assert.equal(after.statusCode, 200, 'the document changed: not a 304');
    const entry = after.json<{ deployments: Entry[] }>().deployments[0]!;
    assert.equal(inputValue(entry, 'deploy_timeout'), '60');
    assert.equal(entry.id, before.json<{ deployments: Entry[] }>().deployments[0]!.id, 'no new action: the same derived config');
    const native = await app.inject({ url: `/v1/default/software_deployments/metadata/${server.id}`, headers: ADMIN });
    assert.deepEqual(native.json<{ metadata: Entry[] }>().metadata, after.json<{ deployments: Entry[] }>().deployments);

    const same = await put(app, id, { status: 'COMPLETE', status_reason: 'done by hand' });
    assert.equal(same.statusCode, 200, same.body);
    const unchanged = await app.inject({
      url: '/v1/guest/metadata',
      headers: { ...server.auth, 'if-none-match': String(after.headers.etag) },
    });
    assert.equal(unchanged.statusCode, 304, 'a status change leaves the document as it is');
  } finally {
    await done();
  }
});

// Heat's update_software_deployment stores the given output_values as they are (only a signal
// merges), and skips empty ones as it skips every empty value.
test('PUT output_values replaces the stored outputs; an empty map changes nothing', async () => {
  const { app, done } = await testApp();
  try {
    const id = await createDeployment(app, await createConfig(app), 'vm-a');
    const first = await put(app, id, { status: 'COMPLETE', output_values: { result: 'r1', deploy_stdout: 'out' } });
    assert.equal(first.statusCode, 200, first.body);
    const second = await put(app, id, { output_values: { result: 'r2' } });
    assert.equal(second.statusCode, 200, second.body);
    assert.deepEqual(second.json<{ software_deployment: { output_values: unknown } }>().software_deployment.output_values, {
      result: 'r2',
    });
    const empty = await put(app, id, { output_values: {} });
    assert.equal(empty.statusCode, 200, empty.body);
    assert.deepEqual(empty.json<{ software_deployment: { output_values: unknown } }>().software_deployment.output_values, { result: 'r2' });
  } finally {
    await done();
  }
});

// `hearth deployment update --input` reads the inputs, merges, and writes them back. Without a
// precondition, a change made by someone else in between (another operator, a signal) was undone.
test('PUT with If-Match applies only to the deployment as it was read; a stale or weak tag is a coded 412 that changes nothing', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id, { input_values: { a: '1' } });
    const read = async () => {
      const reply = await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
      assert.equal(reply.statusCode, 200, reply.body);
      return {
        etag: String(reply.headers.etag),
        deployment: reply.json<{ software_deployment: Record<string, unknown> }>().software_deployment,
      };
    };
    const putIf = (ifMatch: string, payload: Record<string, unknown>) =>
      app.inject({ method: 'PUT', url: `/v1/default/software_deployments/${id}`, headers: { ...ADMIN, 'if-match': ifMatch }, payload });

    const first = await read();
    assert.match(first.etag, /^"[\w-]{27}"$/);
    assert.equal((await read()).etag, first.etag, 'the same deployment has the same tag');

    // Someone else's update lands between this operator's read and write.
    assert.equal((await put(app, id, { input_values: { a: '1', b: '2' } })).statusCode, 200);
    const stale = await putIf(first.etag, { input_values: { a: '1', c: '3' } });
    assert.equal(stale.statusCode, 412, stale.body);
    assert.equal(errorCode(stale), 'ERR_DEPLOYMENT_CHANGED');
    const second = await read();
    assert.deepEqual(second.deployment.input_values, { a: '1', b: '2' }, 'the refused update changed nothing');
    assert.notEqual(second.etag, first.etag);

    // A signal also changes the deployment, and so its tag.
    const signal = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/signal`,
      headers: server.auth,
      payload: { deploy_status_code: 0 },
    });
    assert.equal(signal.statusCode, 200, signal.body);
    assert.equal((await putIf(second.etag, { input_values: { c: '3' } })).statusCode, 412);

    const third = await read();
    assert.equal((await putIf(`W/${third.etag}`, { input_values: { c: '3' } })).statusCode, 412, 'a weak tag never matches If-Match');
    const applied = await putIf(`"other", ${third.etag}`, { input_values: { ...(third.deployment.input_values as object), c: '3' } });
    assert.equal(applied.statusCode, 200, applied.body);
    assert.deepEqual(applied.json<{ software_deployment: { input_values: unknown } }>().software_deployment.input_values, {
      a: '1',
      b: '2',
      c: '3',
    });
    assert.equal(String(applied.headers.etag), (await read()).etag, 'the reply carries the new tag');
    assert.equal((await putIf('*', { action: 'UPDATE' })).statusCode, 200, '* matches any existing deployment');

    const missing = await app.inject({
      method: 'PUT',
      url: '/v1/default/software_deployments/00000000-0000-4000-8000-000000000000',
      headers: { ...ADMIN, 'if-match': '*' },
      payload: { action: 'UPDATE' },
    });
    assert.equal(missing.statusCode, 404, missing.body);
  } finally {
    await done();
  }
});
