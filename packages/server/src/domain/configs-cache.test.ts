import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConfig, testApp } from '../test-support.ts';
import { ConfigService } from './configs.ts';
import { topics } from '../feed/feed.ts';

// The cache was bounded by 10,000 entries only: configs take up to 4 MiB each, so a fleet's configs
// of a few hundred KB each (embedded files, templates) could hold gigabytes in the server's heap.
test('the config cache is bounded by the characters it holds: the oldest configs are dropped, and read again when asked', async () => {
  const { app, done } = await testApp();
  try {
    const configs = new ConfigService(app.services.store, 2_500_000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await createConfig(app, { name: `c${i}`, config: `${i}`.repeat(1_000_000) }));
    for (const id of ids) assert.equal((await configs.get('default', id)).id, id);
    // Gone from the store behind the service's back: only a config still cached can be shown.
    await app.services.store.write(async ({ trx }) => {
      await trx.deleteFrom('software_configs').where('id', 'in', [ids[0]!, ids[2]!]).execute();
    });
    await assert.rejects(configs.get('default', ids[0]!), { code: 'ERR_CONFIG_NOT_FOUND' }, 'the oldest was dropped, so it is read again');
    assert.equal((await configs.get('default', ids[2]!)).config, '2'.repeat(1_000_000), 'the newest is still cached');
    assert.ok(configs.cachedCharacters > 2_000_000 && configs.cachedCharacters <= 2_500_000, `${configs.cachedCharacters}`);
    configs.onFeedTopic(topics.config(ids[2]!));
    assert.ok(configs.cachedCharacters < 1_100_000, `${configs.cachedCharacters}: a dropped config is no longer counted`);
  } finally {
    await done();
  }
});
