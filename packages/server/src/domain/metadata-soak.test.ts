import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, createConfig, createDeployment, testApp } from '../test-support.ts';

interface Registered {
  id: string;
  auth: { authorization: string };
  accessKeyId: string;
}

// A server's document holds its credential and transport (the `os-collect-config` section). A server
// deleted and registered again under the same id (how a VM's credential is replaced) got the deleted
// one's document from the cache: the revoked credential, the old transport, until its deployments changed.
test('a server deleted and registered again under its id gets its own credential in its metadata, not the deleted one', async () => {
  const { app, done } = await testApp();
  try {
    const register = async (transport: string): Promise<Registered> => {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/default/servers',
        headers: ADMIN,
        payload: { name: 'vm', id: 'vm-again', software_config_transport: transport },
      });
      assert.equal(reply.statusCode, 201, reply.body);
      const body = reply.json<{ server: { id: string }; credential: { token: string; access_key_id: string } }>();
      return { id: body.server.id, auth: { authorization: `Bearer ${body.credential.token}` }, accessKeyId: body.credential.access_key_id };
    };
    const collector = async (server: Registered) => {
      const reply = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
      assert.equal(reply.statusCode, 200, reply.body);
      return reply.json<{
        'os-collect-config': { collectors: string[]; hearth?: { access_key_id: string }; heat?: { user_id: string } };
      }>()['os-collect-config'];
    };
    const first = await register('HEARTH_LONG_POLL');
    await createDeployment(app, await createConfig(app), first.id);
    assert.equal((await collector(first)).hearth?.access_key_id, first.accessKeyId);

    const deleted = await app.inject({ method: 'DELETE', url: `/v1/default/servers/${first.id}`, headers: ADMIN });
    assert.equal(deleted.statusCode, 204);
    const again = await register('POLL_SERVER_HEAT');
    const settings = await collector(again);
    assert.deepEqual(settings.collectors, ['heat'], 'the new transport');
    assert.equal(settings.heat?.user_id, again.accessKeyId, 'the new credential');
    assert.ok(!JSON.stringify(settings).includes(first.accessKeyId), 'nothing of the revoked credential');
  } finally {
    await done();
  }
});

// hearth-server runs for months while servers come and go (autoscaling, rebuilt VMs). What it keeps
// per server must go with the server: a counter per server ever changed, and the validators of every
// server ever fetched, stayed for the life of the process.
test('servers registered, deployed to, polled and deleted leave nothing behind in the metadata service or the feed', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const configId = await createConfig(app);
    const churn = async (i: number) => {
      const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: `vm${i}` } });
      const { server, credential } = reply.json<{ server: { id: string }; credential: { token: string } }>();
      const auth = { authorization: `Bearer ${credential.token}` };
      const deployment = await createDeployment(app, configId, server.id);
      const first = await app.inject({ url: '/v1/guest/metadata', headers: auth });
      assert.equal(first.statusCode, 200);
      // A long-poll that the change below ends.
      const poll = app.inject({ url: '/v1/guest/metadata?wait=30', headers: { ...auth, 'if-none-match': String(first.headers.etag) } });
      await new Promise((resolve) => setTimeout(resolve, 5));
      await app.inject({
        method: 'PUT',
        url: `/v1/default/software_deployments/${deployment}`,
        headers: ADMIN,
        payload: { action: 'UPDATE' },
      });
      assert.equal((await poll).statusCode, 200);
      // The server goes first, its deployment after (both orders happen).
      const order =
        i % 2 === 0
          ? [`servers/${server.id}`, `software_deployments/${deployment}`]
          : [`software_deployments/${deployment}`, `servers/${server.id}`];
      for (const path of order)
        assert.equal((await app.inject({ method: 'DELETE', url: `/v1/default/${path}`, headers: ADMIN })).statusCode, 204);
    };
    const { metadata, feed } = app.services;
    await churn(0);
    const tracked = metadata.trackedServers;
    const listeners = feed.listenerCount();
    for (let i = 1; i <= 200; i++) await churn(i);
    assert.equal(metadata.trackedServers, tracked, 'per-server state after 200 servers came and went');
    assert.equal(metadata.size, 0, 'no document cached for a deleted server');
    assert.equal(feed.listenerCount(), listeners, 'feed listeners');
  } finally {
    await done();
  }
});
