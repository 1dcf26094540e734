import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { ANY_TOPIC } from '../../feed/feed.ts';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

/**
 * A request body that the server starts reading only after the guest auth hook has run (fastify
 * parses the body after `onRequest`): on the first read it runs `meanwhile`, then sends `body`.
 */
function bodyAfter(meanwhile: () => Promise<void>, body: unknown): Readable {
  let started = false;
  return new Readable({
    read() {
      if (started) return;
      started = true;
      meanwhile().then(
        () => {
          this.push(JSON.stringify(body));
          this.push(null);
        },
        (error: unknown) => this.destroy(error as Error),
      );
    },
  });
}

/** The deployment's status and timeline event types, as the operator sees them. */
async function deploymentState(app: FastifyInstance, id: string): Promise<{ status: string; events: string[] }> {
  const shown = await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
  const timeline = await app.inject({ url: `/v1/default/software_deployments/${id}/timeline`, headers: ADMIN });
  return {
    status: shown.json<{ software_deployment: { status: string } }>().software_deployment.status,
    events: timeline.json<{ timeline: Array<{ type: string }> }>().timeline.map((e) => e.type),
  };
}

// The guest auth hook authenticates before the body is read. A server deleted while its agent is
// still sending a signal's body has its credential revoked at once: what that request carries must
// not be applied after the revocation, as if the credential were still valid.
for (const [kind, body] of [
  ['signal', { deploy_status_code: 0, deploy_stdout: 'sent after the revocation' }],
  ['heartbeat', { progress: 50 }],
] as const) {
  test(`a ${kind} whose server is deleted while its body is in flight is refused and changes nothing`, async () => {
    const { app, done } = await testApp();
    try {
      const server = await registerServer(app);
      const id = await createDeployment(app, await createConfig(app), server.id);
      // Cache the credential first, as a running agent's is; the fetch it records is written afterwards.
      assert.equal((await app.inject({ url: '/v1/guest/metadata', headers: server.auth })).statusCode, 200);
      let before = await deploymentState(app, id);
      for (let tries = 0; tries < 100 && !before.events.includes('deployment.fetched'); tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        before = await deploymentState(app, id);
      }
      assert.deepEqual(before.events, ['deployment.created', 'deployment.fetched']);

      const deleteServer = async () => {
        const deleted = await app.inject({ method: 'DELETE', url: `/v1/default/servers/${server.id}`, headers: ADMIN });
        assert.equal(deleted.statusCode, 204, deleted.body);
      };
      const late = await app.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${id}/${kind}`,
        headers: { ...server.auth, 'content-type': 'application/json' },
        payload: bodyAfter(deleteServer, body),
      });
      assert.equal(late.statusCode, 401, late.body);
      assert.equal(errorCode(late), 'ERR_AUTH_INVALID');

      const after = await deploymentState(app, id);
      // The delete failed it (its server is gone); the refused request settled nothing and recorded nothing.
      assert.equal(after.status, 'FAILED', 'failed by the delete, not settled by the revoked credential');
      assert.deepEqual(after.events, [...before.events, 'deployment.failed'], 'only the delete was recorded');
    } finally {
      await done();
    }
  });
}

test('a signal whose body arrives while its credential is still valid is applied (the recheck refuses only the revoked)', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const other = await registerServer(app, 'other');
    const id = await createDeployment(app, await createConfig(app), server.id);
    // Uncached: the recheck reads the store, and deleting another server meanwhile changes nothing for this one.
    app.services.servers.onFeedTopic(ANY_TOPIC);
    const deleteOther = async () => {
      const deleted = await app.inject({ method: 'DELETE', url: `/v1/default/servers/${other.id}`, headers: ADMIN });
      assert.equal(deleted.statusCode, 204, deleted.body);
      app.services.servers.onFeedTopic(ANY_TOPIC);
    };
    const signalled = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/signal`,
      headers: { ...server.auth, 'content-type': 'application/json' },
      payload: bodyAfter(deleteOther, { deploy_status_code: 0 }),
    });
    assert.equal(signalled.statusCode, 200, signalled.body);
    assert.equal((await deploymentState(app, id)).status, 'COMPLETE');
  } finally {
    await done();
  }
});
