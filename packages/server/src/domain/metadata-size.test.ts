import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../test-support.ts';
import { estimateDocumentBytes, MAX_METADATA_DOCUMENT_BYTES, MetadataService } from './metadata.ts';

// The hearth collector refuses a document larger than 64 MiB (agent-kit's response limit): a server
// that accepted the deployment making it so would serve, to the end, a document its agent never reads,
// and none of that server's deployments (old or new) would run again.
test('a deployment that would make the document larger than its agent reads is refused, and nothing is stored', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    // 4 MB of script: 16 deployments of it fit in 64 MiB, 17 do not.
    const big = await createConfig(app, { name: 'big', config: `#!/bin/sh\n${'x'.repeat(4_000_000)}` });
    const small = await createConfig(app, { name: 'small' });
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) ids.push(await createDeployment(app, big, server.id, { name: `d${String(i).padStart(2, '0')}` }));
    const before = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(before.statusCode, 200);
    assert.ok(before.rawPayload.length <= MAX_METADATA_DOCUMENT_BYTES, `${before.rawPayload.length} bytes`);

    const refused = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: big, server_id: server.id, name: 'one-too-many' },
    });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(errorCode(refused), 'ERR_DEPLOYMENT_INVALID');
    assert.match(
      refused.json<{ error: { message: string } }>().error.message,
      /metadata document would be about 6\d\.\d MiB, over the 64\.0 MiB/,
    );

    // A new action that grows a deployment past the limit is refused the same way.
    const swap = await createDeployment(app, small, server.id, { name: 'swap' });
    const swapped = await app.inject({
      method: 'PUT',
      url: `/v1/default/software_deployments/${swap}`,
      headers: ADMIN,
      payload: { config_id: big },
    });
    assert.equal(swapped.statusCode, 400, swapped.body);
    assert.equal(errorCode(swapped), 'ERR_DEPLOYMENT_INVALID');

    const listed = await app.inject({ url: `/v1/default/software_deployments?server_id=${server.id}`, headers: ADMIN });
    const deployments = listed.json<{ software_deployments: Array<{ name: string; config_id: string }> }>().software_deployments;
    assert.deepEqual(
      deployments.map((d) => d.name),
      [...ids.map((_, i) => `d${String(i).padStart(2, '0')}`), 'swap'],
    );
    assert.equal(deployments.at(-1)!.config_id, small, 'the refused update changed nothing');
    const after = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.ok(after.rawPayload.length <= MAX_METADATA_DOCUMENT_BYTES, `${after.rawPayload.length} bytes`);
    const events = await app.inject({ url: '/v1/default/events?type=deployment.created&limit=1000', headers: ADMIN });
    assert.equal(events.json<{ events: unknown[] }>().events.length, 17, 'no event of the refused deployment');

    // Another server is not held back by this one's document.
    const other = await registerServer(app, 'other');
    await createDeployment(app, big, other.id);
  } finally {
    await done();
  }
});

test('the estimate is never below the document actually served, whatever the transport, names and inputs', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configs = [
      await createConfig(app, {
        name: '\u0001'.repeat(255),
        config: '\u0000\n"'.repeat(1000),
        inputs: [{ name: 'a', default: 'd'.repeat(500) }, { name: 'b' }],
        options: { k: '\u0002'.repeat(100) },
      }),
      await createConfig(app, { config: { nested: ['é', 1.5, null] } }),
    ];
    const transports = ['NO_SIGNAL', 'HEARTH_SIGNAL', 'CFN_SIGNAL', 'HEAT_SIGNAL', 'TEMP_URL_SIGNAL'];
    for (let i = 0; i < 20; i++) {
      await createDeployment(app, configs[i % 2]!, server.id, {
        name: i % 3 === 0 ? undefined : '\u0003'.repeat(255),
        signal_transport: transports[i % transports.length],
        input_values:
          i % 4 === 0 ? {} : { a: 'v'.repeat(i * 10), ...Object.fromEntries(Array.from({ length: 50 }, (_, k) => [`k${k}`, k])) },
      });
    }
    const served = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(served.statusCode, 200);
    const estimate = await app.services.store.write(({ trx }) => estimateDocumentBytes(trx, 'default', server.id));
    assert.ok(estimate >= served.rawPayload.length, `estimate ${estimate} < served ${served.rawPayload.length}`);
    assert.ok(estimate < served.rawPayload.length * 4, `estimate ${estimate} is not far above ${served.rawPayload.length}`);
  } finally {
    await done();
  }
});

// 50,000 entries was the only bound: a few hundred servers with documents of tens of MB each held
// gigabytes of cached text (one 100 MB document and one 60 MB one took the server from 260 MB to 890 MB RSS).
test('the document cache is bounded by the characters it holds, not only by its number of entries', async () => {
  const { app, done } = await testApp();
  try {
    const { store, configs, feed } = app.services;
    const metadata = new MetadataService(
      store,
      configs,
      feed,
      () => null,
      async () => ({}),
      50_000,
      2_500_000,
    );
    const config = await createConfig(app, { config: 'x'.repeat(1_000_000) });
    const servers = [];
    for (const name of ['a', 'b', 'c']) {
      const server = await registerServer(app, name);
      await createDeployment(app, config, server.id);
      servers.push(server);
    }
    const bodies = [];
    for (const server of servers) bodies.push((await metadata.snapshot('default', server.id)).body);
    assert.ok(bodies.every((body) => body.length > 1_000_000));
    assert.equal(metadata.cached(servers[0]!.id), undefined, 'the oldest is dropped to make room');
    assert.equal(metadata.cached(servers[1]!.id)?.body, bodies[1]);
    assert.equal(metadata.cached(servers[2]!.id)?.body, bodies[2]);
    assert.equal(metadata.cachedCharacters, bodies[1]!.length + bodies[2]!.length);
    // Invalidation keeps the count true, and a document dropped is built again when asked.
    metadata.invalidate(servers[1]!.id);
    assert.equal(metadata.cachedCharacters, bodies[2]!.length);
    assert.equal((await metadata.snapshot('default', servers[0]!.id)).body, bodies[0]);
    assert.equal(metadata.size, 2);
    assert.ok(metadata.cachedCharacters <= 2_500_000);
  } finally {
    await done();
  }
});
