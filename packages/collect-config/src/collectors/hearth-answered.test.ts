// The hearth collector tells heat-config-notify's drain that the server answers again (agent-kit's
// server-answered mark), so that signals queued while it was down go out at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { serverAnsweredAt } from '@hearth/agent-kit';
import { createHearthCollector } from './hearth.ts';
import { contextFor, fakeServer, optionsFor } from '../test-support/fixtures.ts';

test('hearth: an answered poll marks the server answered while a signal is queued; not with none, nor on a refusal or a stopping server', async () => {
  let reply: { status: number; headers?: Record<string, string> } = { status: 200 };
  const server = await fakeServer((_request, response) => {
    response.writeHead(reply.status, { 'content-type': 'application/json', etag: '"v1"', ...reply.headers });
    response.end(reply.status === 200 ? '{"deployments":[]}' : '');
  });
  try {
    const ctx = contextFor(
      optionsFor([
        '--hearth-metadata-url',
        `${server.url}/v1/guest/metadata`,
        '--hearth-access-key-id',
        'AK',
        '--hearth-secret-access-key',
        'S',
      ]),
    );
    const outbox = ctx.options.paths.outboxDir;
    const collector = createHearthCollector();
    const marks = () => readdirSync(outbox).filter((name) => name.startsWith('.answered-'));

    // Nothing queued: no mark (and no outbox is created for it).
    assert.equal((await collector.collect(ctx)).kind, 'data');
    mkdirSync(outbox, { recursive: true });
    assert.equal((await collector.collect(ctx)).kind, 'data');
    assert.deepEqual(marks(), []);

    // A signal queued: a refused poll and a stopping server's 304 (Retry-After) say nothing; a 304 and a 200 do.
    writeFileSync(`${outbox}/queued.json`, '{}');
    reply = { status: 401 };
    assert.equal((await collector.collect(ctx)).kind, 'unavailable');
    reply = { status: 304, headers: { 'retry-after': '1' } };
    await collector.collect(ctx);
    assert.deepEqual(marks(), []);
    const before = Date.now();
    reply = { status: 304 };
    await collector.collect(ctx);
    const at = serverAnsweredAt(outbox, server.url);
    assert.ok(at >= before && at <= Date.now(), `marked at ${at}`);
    reply = { status: 200 };
    await new Promise((resolve) => setTimeout(resolve, 5));
    await collector.collect(ctx);
    assert.ok(serverAnsweredAt(outbox, server.url) > at, 'a later answer moves the mark');
    assert.equal(marks().length, 1, 'one mark per origin');
  } finally {
    await server.close();
  }
});
