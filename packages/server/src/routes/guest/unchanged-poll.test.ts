import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ADMIN, eventually, metricValue, registerServer, testApp } from '../../test-support.ts';

// An agent's plain poll of an unchanged document is answered before fastify routes it
// (unchanged-poll.ts). These run over real HTTP, the only way such a poll arrives; an app-level
// onRequest hook of the test counts what reaches fastify.

/** Counts the metadata requests fastify answers, refusals included (call before the app is ready). */
function countRouted(app: FastifyInstance): { count: number } {
  const routed = { count: 0 };
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.url.startsWith('/v1/guest/metadata')) routed.count++;
    done();
  });
  return routed;
}

/** One GET over HTTP: status, raw headers in order (Date left out), body. */
function get(url: string, headers: Record<string, string>, method = 'GET'): Promise<{ status: number; headers: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        const raw: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          if (res.rawHeaders[i]!.toLowerCase() !== 'date') raw.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        }
        resolve({ status: res.statusCode ?? 0, headers: raw, body });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Listens on loopback, registers an agent (`name`) and makes its first call, which goes through
 * fastify and leaves its credential and document cached: the URL, the agent, that reply and its ETag.
 */
async function pollingAgent(app: FastifyInstance, name = 'vm') {
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const agent = await registerServer(app, name);
  const first = await get(`${base}/v1/guest/metadata`, agent.auth);
  const etag = first.headers.find((h) => h.startsWith('etag: '))!.slice(6);
  return { base, agent, first, etag };
}

const polls304 = 'hearth_http_requests_total{route="/v1/guest/metadata",method="GET",status="304"}';

test("an unchanged poll is answered before fastify, with the route's own reply, metrics and last-seen time", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const routed = countRouted(app);
    // The agent's first call goes through fastify: its credential and document are cached after it.
    const { base, agent, first, etag } = await pollingAgent(app);
    assert.equal(first.status, 200);
    assert.equal(routed.count, 1);
    const seen = app.services.servers.lastSeen(agent.id, null)!;
    await new Promise((resolve) => setTimeout(resolve, 5));

    const poll = { ...agent.auth, 'if-none-match': etag };
    const fast = await get(`${base}/v1/guest/metadata`, poll);
    assert.equal(fast.status, 304);
    assert.equal(fast.body, '');
    assert.equal(routed.count, 1, 'fastify never saw the poll');
    assert.ok(app.services.servers.lastSeen(agent.id, null)! > seen, "the poll is the agent's last sign of life");

    // The same poll through fastify's route (a query string, here an explicit zero wait, takes that path).
    const routedReply = await get(`${base}/v1/guest/metadata?wait=0`, poll);
    assert.equal(routed.count, 2);
    assert.equal(routedReply.status, 304);
    assert.deepEqual(fast.headers, routedReply.headers, 'the same headers, in the same order');
    assert.ok(fast.headers.includes(`etag: ${etag}`));
    assert.ok(fast.headers.includes('cache-control: no-cache'));

    await eventually(async () => (await metricValue(app, polls304)) === 2, 'both 304s are counted');
    assert.equal(await metricValue(app, 'hearth_metadata_replies_total{status="304"}'), 2);
    assert.equal(await metricValue(app, 'hearth_http_request_duration_seconds_count{route="/v1/guest/metadata"}'), 3);

    // A weak or listed validator naming the document is a hit too, as the route takes it.
    assert.equal((await get(`${base}/v1/guest/metadata`, { ...agent.auth, 'if-none-match': `"x", W/${etag}` })).status, 304);
    assert.equal(routed.count, 2);
  } finally {
    await done();
  }
});

test('whatever the shortcut does not answer, fastify answers as before: refusals, other documents, other requests', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const routed = countRouted(app);
    const { base, agent: mine, first, etag } = await pollingAgent(app, 'mine');
    const other = await registerServer(app, 'other');
    const url = `${base}/v1/guest/metadata`;
    let expected = 1;
    const through = async (status: number, headers: Record<string, string>, what: string, to = url, method = 'GET') => {
      const reply = await get(to, headers, method);
      assert.equal(reply.status, status, what);
      assert.equal(routed.count, ++expected, `${what}: answered by fastify`);
      return reply;
    };
    const code = (reply: { body: string }) => (JSON.parse(reply.body) as { error: { code: string } }).error.code;

    // Refusals keep their coded errors.
    const wrongSecret = `${mine.auth.authorization.slice(0, -2)}xx`;
    assert.equal(code(await through(401, { authorization: wrongSecret, 'if-none-match': etag }, 'a wrong secret')), 'ERR_AUTH_INVALID');
    assert.equal(code(await through(401, { 'if-none-match': etag }, 'no credential')), 'ERR_AUTH_MISSING');
    assert.equal(code(await through(403, { ...ADMIN, 'if-none-match': etag }, 'the operator')), 'ERR_AUTH_FORBIDDEN');
    // Another server's credential with my document's validator: its own document, never a 304 for mine.
    const theirs = await through(200, { ...other.auth, 'if-none-match': etag }, "another server's credential");
    assert.match(theirs.body, new RegExp(other.id));
    assert.doesNotMatch(theirs.body, new RegExp(mine.id));
    // A stale validator gets the document; a long-poll, HEAD and another path are the route's.
    assert.equal((await through(200, { ...mine.auth, 'if-none-match': '"stale"' }, 'a stale validator')).body, first.body);
    await through(304, { ...mine.auth, 'if-none-match': etag }, 'a long-poll', `${url}?wait=1`);
    await through(304, { ...mine.auth, 'if-none-match': etag }, 'HEAD', url, 'HEAD');
    await through(304, { ...mine.auth, 'if-none-match': etag }, 'a trailing slash', `${url}/`);

    // Its server deleted, the credential is refused at once, with a validator that was current.
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/default/servers/${mine.id}`, headers: ADMIN })).statusCode, 204);
    assert.equal(code(await through(401, { ...mine.auth, 'if-none-match': etag }, 'a deleted server')), 'ERR_AUTH_INVALID');
  } finally {
    await done();
  }
});

test('while the app closes, a poll gets the coded 503 like every request', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const { base, agent, etag } = await pollingAgent(app);
    // A write whose body is still arriving holds the close open (it is drained, up to 10 s).
    const held = new Socket();
    held.on('error', () => undefined);
    held.connect(Number(new URL(base).port), '127.0.0.1');
    await new Promise((resolve) => held.once('connect', resolve));
    const body = '{"name":"late","group":"script","config":"true"}';
    held.write(
      `POST /v1/default/software_configs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: ${ADMIN['x-auth-token']}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = app.close();
    let reply = await fetch(`${base}/v1/guest/metadata`, { headers: { ...agent.auth, 'if-none-match': etag } });
    for (let i = 0; i < 50 && reply.status === 304; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      reply = await fetch(`${base}/v1/guest/metadata`, { headers: { ...agent.auth, 'if-none-match': etag } });
    }
    assert.equal(reply.status, 503);
    assert.equal(((await reply.json()) as { error: { code: string } }).error.code, 'ERR_SERVER_SHUTTING_DOWN');
    held.write(body.slice(10));
    await closing;
    held.destroy();
  } finally {
    await done();
  }
});

test('with requests logged (info), every poll goes through fastify and is logged', async () => {
  const lines: string[] = [];
  const stream = new (await import('node:stream')).Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  const { app, done } = await testApp({ logger: { level: 'info', stream } });
  try {
    const routed = countRouted(app);
    const { base, agent, etag } = await pollingAgent(app);
    assert.equal((await get(`${base}/v1/guest/metadata`, { ...agent.auth, 'if-none-match': etag })).status, 304);
    assert.equal(routed.count, 2);
    await eventually(
      async () => lines.some((line) => /"statusCode":304/.test(line) && /request completed/.test(line)),
      'the 304 is logged as completed',
    );
  } finally {
    await done();
  }
});

test('a failure inside the shortcut leaves the poll to the route, and the server goes on', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const { base, agent, etag } = await pollingAgent(app);
    const poll = { ...agent.auth, 'if-none-match': etag };
    // A fault the shortcut meets before it sends anything (here its first metric), once: the route answers the poll.
    const counter = app.services.metrics.metadataReplies;
    const inc = counter.inc.bind(counter) as (labels: { status: string }) => void;
    let faults = 1;
    (counter as { inc: (labels: { status: string }) => void }).inc = (labels) => {
      if (faults-- > 0) throw new Error('injected fault');
      inc(labels);
    };
    assert.equal((await get(`${base}/v1/guest/metadata`, poll)).status, 304);
    assert.equal(faults, -1, 'the fault was met, then the route counted the reply');
    assert.equal((await get(`${base}/v1/guest/metadata`, poll)).status, 304);
  } finally {
    await done();
  }
});
