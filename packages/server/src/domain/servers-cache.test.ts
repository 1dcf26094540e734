import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, registerServer, testApp } from '../test-support.ts';
import { topics } from '../feed/feed.ts';

// With several replicas a server deleted through one reaches the others as a feed topic. If it arrives
// while a replica is reading that server's row to authenticate its agent, the row read is the
// revoked one: caching it would let the deleted server's credential in until the next resync.
test('a revocation that arrives while a credential is being looked up is not undone by caching that lookup', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const [accessKeyId, secret] = server.token.split(':') as [string, string];
    const servers = app.services.servers;
    const read = servers.byAccessKeyId.bind(servers);
    let deletedMeanwhile = false;
    servers.byAccessKeyId = async (key: string) => {
      const row = await read(key);
      // The row was read; now another replica's delete of this server is committed and its topic arrives.
      await app.services.store.write(async ({ trx }) => {
        await trx.deleteFrom('servers').where('id', '=', server.id).execute();
      });
      servers.onFeedTopic(topics.credential(key));
      deletedMeanwhile = true;
      return row;
    };
    const equal = (a: string, b: string) => a === b;
    assert.ok(await servers.authenticate(accessKeyId, secret, equal), 'the call that raced the delete may pass');
    assert.ok(deletedMeanwhile);
    servers.byAccessKeyId = read;
    assert.equal(servers.cachedIdentity(accessKeyId), undefined, 'but what it read is not cached');
    assert.equal(await servers.authenticate(accessKeyId, secret, equal), null, 'the next call re-reads and is refused');
    const poll = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(poll.statusCode, 401);
    assert.equal((await app.inject({ url: `/v1/default/servers/${server.id}`, headers: ADMIN })).statusCode, 404);
  } finally {
    await done();
  }
});

test('a config deleted (through another replica) while it is being read is not cached as if it still existed', async () => {
  const { app, done } = await testApp();
  try {
    const created = await app.inject({ method: 'POST', url: '/v1/default/software_configs', headers: ADMIN, payload: { group: 'script' } });
    const id = created.json<{ software_config: { id: string } }>().software_config.id;
    const configs = app.services.configs;
    configs.onFeedTopic(topics.config(id)); // start from an empty cache, as on another replica
    const reading = configs.get('default', id); // reads the row...
    configs.onFeedTopic(topics.config(id)); // ...while another replica's delete of it arrives
    await reading;
    // The row is gone from the store (that replica's delete); only a cached copy could still answer.
    await app.services.store.write(async ({ trx }) => {
      await trx.deleteFrom('software_configs').where('id', '=', id).execute();
    });
    const after = await app.inject({ url: `/v1/default/software_configs/${id}`, headers: ADMIN });
    assert.equal(after.statusCode, 404, 'the deleted config is not served from the cache');
  } finally {
    await done();
  }
});
