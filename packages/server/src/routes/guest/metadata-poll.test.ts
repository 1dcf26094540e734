import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The value of one Prometheus series in the /metrics text, or undefined. */
function series(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

// Once an agent's credential and document are cached, its poll is answered without a promise (the
// hot path of the metadata benchmark). That path must refuse, count and record exactly as the first
// (uncached) call does.
test('a cached metadata poll authenticates, answers, counts and records last-seen like the first one', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    await createDeployment(app, await createConfig(app), server.id);
    const first = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(first.statusCode, 200);
    const etag = String(first.headers.etag);
    const seenFirst = app.services.servers.lastSeen(server.id, null);
    assert.ok(seenFirst, 'the first call is recorded as last seen');
    await sleep(5);

    const poll = await app.inject({ url: '/v1/guest/metadata', headers: { ...server.auth, 'if-none-match': etag } });
    assert.equal(poll.statusCode, 304);
    assert.equal(poll.body, '');
    assert.equal(poll.headers.etag, etag);
    assert.equal(poll.headers['last-modified'], first.headers['last-modified']);
    assert.equal(poll.headers['cache-control'], 'no-cache');
    assert.ok(app.services.servers.lastSeen(server.id, null)! > seenFirst, 'the cached poll is recorded as last seen too');
    const again = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(again.statusCode, 200, 'no If-None-Match: the document');
    assert.equal(again.body, first.body);
    const stale = await app.inject({ url: '/v1/guest/metadata', headers: { ...server.auth, 'if-none-match': '"other"' } });
    assert.equal(stale.statusCode, 200, 'another ETag: the document');

    const accessKeyId = server.token.split(':')[0]!;
    const refusals: Array<[string, Record<string, string>, number, string]> = [
      ['wrong secret', { authorization: `Bearer ${accessKeyId}:${'x'.repeat(40)}` }, 401, 'ERR_AUTH_INVALID'],
      ['secret with a prefix of the right one', { authorization: `${server.auth.authorization}x` }, 401, 'ERR_AUTH_INVALID'],
      ['no secret', { authorization: `Bearer ${accessKeyId}:` }, 401, 'ERR_AUTH_INVALID'],
      ['no credential', {}, 401, 'ERR_AUTH_MISSING'],
      ['the operator token', ADMIN, 403, 'ERR_AUTH_FORBIDDEN'],
    ];
    for (const [name, headers, status, code] of refusals) {
      const reply = await app.inject({ url: '/v1/guest/metadata', headers: { ...headers, 'if-none-match': etag } });
      assert.equal(reply.statusCode, status, `${name}: ${reply.body}`);
      assert.equal(errorCode(reply), code, name);
      assert.equal(reply.headers.etag, undefined, `${name}: no validator leaks`);
    }

    const metrics = (await app.inject({ url: '/metrics' })).body;
    assert.equal(series(metrics, 'hearth_metadata_replies_total{status="304"}'), 1);
    assert.equal(series(metrics, 'hearth_metadata_replies_total{status="200"}'), 3);
    assert.equal(series(metrics, 'hearth_http_requests_total{route="/v1/guest/metadata",method="GET",status="304"}'), 1);
    assert.equal(series(metrics, 'hearth_http_requests_total{route="/v1/guest/metadata",method="GET",status="401"}'), 4);
    assert.equal(series(metrics, 'hearth_http_request_duration_seconds_count{route="/v1/guest/metadata"}'), 9);

    // Deleting the server revokes the cached credential at once.
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/default/servers/${server.id}`, headers: ADMIN })).statusCode, 204);
    const revoked = await app.inject({ url: '/v1/guest/metadata', headers: { ...server.auth, 'if-none-match': etag } });
    assert.equal(revoked.statusCode, 401);
    assert.equal(errorCode(revoked), 'ERR_AUTH_INVALID');
  } finally {
    await done();
  }
});

test('a cached poll that asks to wait still waits for a change', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const first = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    const etag = String(first.headers.etag);
    const started = Date.now();
    const poll = app.inject({ url: '/v1/guest/metadata?wait=30', headers: { ...server.auth, 'if-none-match': etag } });
    await sleep(100);
    await createDeployment(app, await createConfig(app), server.id);
    const reply = await poll;
    assert.equal(reply.statusCode, 200);
    assert.notEqual(reply.headers.etag, etag);
    assert.equal(reply.json<{ deployments: unknown[] }>().deployments.length, 1);
    assert.ok(Date.now() - started < 10_000, 'woken by the change, not by the wait ending');
  } finally {
    await done();
  }
});

test('a long-poll ends with ERR_AUTH_INVALID when its server is deleted while it waits, not a 304 after the wait', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const keep = await registerServer(app, 'keep');
    const etagOf = async (auth: Record<string, string>) =>
      String((await app.inject({ url: '/v1/guest/metadata', headers: auth })).headers.etag);
    const etag = await etagOf(server.auth);
    const keepEtag = await etagOf(keep.auth);
    const started = Date.now();
    const poll = app.inject({ url: '/v1/guest/metadata?wait=30', headers: { ...server.auth, 'if-none-match': etag } });
    // Another server's long-poll goes on: only the revoked credential's wait ends.
    const other = app.inject({ url: '/v1/guest/metadata?wait=2', headers: { ...keep.auth, 'if-none-match': keepEtag } });
    await sleep(200);
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/default/servers/${server.id}`, headers: ADMIN })).statusCode, 204);
    const reply = await poll;
    assert.equal(reply.statusCode, 401, reply.body);
    assert.equal(errorCode(reply), 'ERR_AUTH_INVALID');
    assert.equal(reply.headers.etag, undefined, 'no validator for a revoked credential');
    assert.ok(Date.now() - started < 10_000, 'ended by the revocation, not by the wait running out');
    const kept = await other;
    assert.equal(kept.statusCode, 304, 'the other server still waits its full wait and gets its 304');
    assert.ok(Date.now() - started >= 2_000);
  } finally {
    await done();
  }
});

test('after a feed resync a long-poll keeps waiting while its credential is live, and ends with 401 once it is gone', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const etag = String((await app.inject({ url: '/v1/guest/metadata', headers: server.auth })).headers.etag);
    let settled = false;
    const poll = app.inject({ url: '/v1/guest/metadata?wait=30', headers: { ...server.auth, 'if-none-match': etag } });
    void poll.then(() => (settled = true));
    await sleep(200);
    app.services.feed.wakeAll(); // what a replica does after its LISTEN connection came back
    await sleep(500);
    assert.equal(settled, false, 'a live credential keeps waiting: a resync does not answer every long-poll at once');

    // The server row disappears without its revocation topic (as if the feed missed it): the next resync ends the wait.
    await app.services.store.write(async ({ trx }) => {
      await trx.deleteFrom('servers').where('id', '=', server.id).execute();
    });
    app.services.feed.wakeAll();
    const reply = await poll;
    assert.equal(reply.statusCode, 401, reply.body);
    assert.equal(errorCode(reply), 'ERR_AUTH_INVALID');
  } finally {
    await done();
  }
});

// Closing ends every long-poll at once with a 304. Marked so, it is no proxy declining to hold: the
// agent asks again in about a second (the server restarted, or another replica), not after its
// polling interval; a 304 at the end of a full wait is not marked.
test('a long-poll ended by the app closing is a 304 with Retry-After: 1 and Connection: close', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const etag = String((await app.inject({ url: '/v1/guest/metadata', headers: server.auth })).headers.etag);
    const waited = await app.inject({ url: '/v1/guest/metadata?wait=1', headers: { ...server.auth, 'if-none-match': etag } });
    assert.equal(waited.statusCode, 304);
    assert.equal(waited.headers['retry-after'], undefined, 'a full wait is not marked');
    assert.notEqual(waited.headers.connection, 'close');

    const started = Date.now();
    const poll = app.inject({ url: '/v1/guest/metadata?wait=30', headers: { ...server.auth, 'if-none-match': etag } });
    await sleep(200);
    const closing = app.close();
    const reply = await poll;
    await closing;
    assert.equal(reply.statusCode, 304);
    assert.equal(reply.headers.etag, etag);
    assert.equal(reply.headers['retry-after'], '1');
    assert.equal(reply.headers.connection, 'close');
    assert.ok(Date.now() - started < 10_000, 'ended by the close, not by the wait');
  } finally {
    await done();
  }
});
