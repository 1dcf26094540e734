// Heat's `GET /v1/{p}/software_deployments/metadata/{server_id}` is open to the server's own agent.
// Its credential is checked when the request comes in, and the server's delete can commit while the
// deployments are read: once that DELETE has answered 204, the agent gets 401, never the deleted
// server's deployments (their input values hold its secrets).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

test("an agent's deployments read that races its server's delete gets 401, not the deleted server's deployments", async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    await createDeployment(app, configId, server.id, { input_values: { db_password: 'hunter2-in-input' } });
    const url = `/v1/default/software_deployments/metadata/${server.id}`;
    const before = await app.inject({ url, headers: server.auth });
    assert.equal(before.statusCode, 200, before.body);
    assert.match(before.body, /hunter2-in-input/);

    // The DELETE runs (and answers) after the deployments were read, before the agent is answered.
    const metadata = app.services.metadata;
    const original = metadata.derivedConfigs.bind(metadata);
    let deleted: LightMyRequestResponse | undefined;
    metadata.derivedConfigs = async (...args: Parameters<typeof original>) => {
      const result = await original(...args);
      deleted = await app.inject({ method: 'DELETE', url: `/v1/default/servers/${server.id}`, headers: ADMIN });
      return result;
    };
    const raced = await app.inject({ url, headers: server.auth });
    assert.equal(deleted?.statusCode, 204, deleted?.body);
    assert.equal(raced.statusCode, 401, raced.body);
    assert.equal(errorCode(raced), 'ERR_AUTH_INVALID');
    assert.doesNotMatch(raced.body, /hunter2-in-input/);

    // The operator's own read is not an agent's: it is answered (the server's deployments are gone with it).
    const operator = await app.inject({ url, headers: ADMIN });
    assert.equal(operator.statusCode, 200, operator.body);
  } finally {
    await done();
  }
});
