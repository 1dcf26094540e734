import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, createConfig, createDeployment, injectUrl, registerServer, testApp } from '../test-support.ts';
import { nextLastModified } from './metadata.ts';

test('nextLastModified: kept while the ETag is the same, else now but at least a second later', () => {
  const t = Date.parse('2026-01-02T03:04:05Z');
  assert.equal(nextLastModified(undefined, '"a"', t + 700), t, 'whole seconds');
  assert.equal(nextLastModified({ etag: '"a"', lastModifiedMs: t }, '"a"', t + 9000), t, 'same document, same date');
  assert.equal(nextLastModified({ etag: '"a"', lastModifiedMs: t }, '"b"', t + 300), t + 1000, 'a change in the same second');
  assert.equal(nextLastModified({ etag: '"a"', lastModifiedMs: t }, '"b"', t + 4200), t + 4000, 'a later change: now');
});

// os-collect-config's `request` collector (POLL_TEMP_URL) HEADs the metadata URL and skips the
// document unless Last-Modified is newer than the one it fetched last.
test('POLL_TEMP_URL metadata: Last-Modified moves with every change, even two in one second, and only then', async () => {
  const frozen = Date.parse('2026-03-04T05:06:07.250Z');
  mock.timers.enable({ apis: ['Date'], now: frozen });
  const { app, done } = await testApp();
  try {
    const reply = await app.inject({
      method: 'POST',
      url: '/v1/default/servers',
      headers: ADMIN,
      payload: { name: 'vm', software_config_transport: 'POLL_TEMP_URL' },
    });
    assert.equal(reply.statusCode, 201, reply.body);
    const { server, os_collect_config: occ } = reply.json<{
      server: { id: string };
      os_collect_config: { request: { metadata_url: string } };
    }>();
    const head = async () => {
      const r = await injectUrl(app, 'HEAD', occ.request.metadata_url);
      assert.equal(r.statusCode, 200, r.body);
      return { etag: String(r.headers.etag), lastModified: Date.parse(String(r.headers['last-modified'])) };
    };
    const configId = await createConfig(app);

    const empty = await head();
    await createDeployment(app, configId, server.id, { name: 'first' });
    const one = await head();
    await createDeployment(app, configId, server.id, { name: 'second' });
    const two = await head();
    assert.notEqual(one.etag, empty.etag);
    assert.notEqual(two.etag, one.etag);
    assert.ok(one.lastModified > empty.lastModified, 'the first change is newer');
    assert.ok(two.lastModified > one.lastModified, 'a second change in the same second is newer still');

    mock.timers.tick(5000);
    app.services.metadata.invalidate(server.id);
    const rebuilt = await head();
    assert.equal(rebuilt.etag, two.etag);
    assert.equal(rebuilt.lastModified, two.lastModified, 'a document rebuilt unchanged keeps its date');

    await createDeployment(app, configId, server.id, { name: 'third' });
    const three = await head();
    assert.equal(three.lastModified, Math.floor((frozen + 5000) / 1000) * 1000, 'a later change is dated now');
  } finally {
    await done();
    mock.timers.reset();
  }
});

test('a change committed while a document is being built, before anything is cached, is not lost to the cache', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app);
    const configId = await createConfig(app);
    // The build reads the deployments, then the collector settings: a deployment created in between
    // is committed (and published) while no cache entry exists yet.
    const servers = app.services.servers;
    const collectorSettings = servers.collectorSettings.bind(servers);
    let raced = false;
    servers.collectorSettings = async (serverId: string) => {
      if (!raced) {
        raced = true;
        await createDeployment(app, configId, vm.id, { name: 'raced' });
      }
      return collectorSettings(serverId);
    };
    const first = await app.inject({ url: '/v1/guest/metadata', headers: vm.auth });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json<{ deployments: unknown[] }>().deployments.length, 0, 'built from what it read before the change');
    const next = await app.inject({ url: '/v1/guest/metadata', headers: vm.auth });
    assert.equal(
      next.json<{ deployments: unknown[] }>().deployments.length,
      1,
      'the next request sees the change, not a stale cached document',
    );
    const again = await app.inject({ url: '/v1/guest/metadata', headers: { ...vm.auth, 'if-none-match': String(first.headers.etag) } });
    assert.equal(again.statusCode, 200, 'the first ETag is not answered 304');
  } finally {
    await done();
  }
});
