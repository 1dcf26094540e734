// Requests at the edges of what hearth accepts: bodies that parse but cannot be kept, URLs the
// router refuses, HEAD on a stream, header spellings. Each gets a coded answer and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bodyProblem, MAX_BODY_DEPTH, syntaxReason } from './body-parser.ts';
import { clientErrorOf, errorBody } from './app-errors.ts';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from './test-support.ts';
import { rawExchange } from './test-support-wire.ts';

const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

test('bodyProblem: depth, non-finite numbers, lone surrogates and prototype keys; nothing else', () => {
  assert.equal(bodyProblem(JSON.parse(nested(MAX_BODY_DEPTH))), undefined);
  assert.match(bodyProblem(JSON.parse(nested(MAX_BODY_DEPTH + 1))) ?? '', /nested deeper than 100 levels/);
  assert.match(bodyProblem(JSON.parse(`{"a":${nested(50_000)}}`)) ?? '', /nested deeper/, 'the check itself does not overflow');
  assert.match(bodyProblem(JSON.parse('{"code":1e400}')) ?? '', /too large/);
  assert.match(bodyProblem(JSON.parse('{"name":"\\ud800"}')) ?? '', /lone UTF-16 surrogate/);
  assert.match(bodyProblem(JSON.parse('{"\\udc00":1}')) ?? '', /key contains a lone/);
  assert.match(bodyProblem(JSON.parse('{"a":{"__proto__":{"x":1}}}')) ?? '', /__proto__/);
  assert.match(bodyProblem(JSON.parse('{"constructor":{"prototype":{}}}')) ?? '', /constructor\.prototype/);
  const fine = { s: 'emoji \ud83d\ude00 and NUL-free text', n: [0, -1.5, 1e308], b: true, z: null, constructor: 'a name' };
  assert.equal(bodyProblem(fine), undefined);
});

test('syntaxReason says where JSON breaks, never the text around it', () => {
  for (const text of ['{"password":S3CRET-PASSWORD}', '{"password":"S3CRET-PASSWORD"', 'S3CRET-PASSWORD']) {
    let error: Error | undefined;
    try {
      JSON.parse(text);
    } catch (caught) {
      error = caught as Error;
    }
    assert.ok(error, text);
    const reason = syntaxReason(error);
    assert.doesNotMatch(reason, /S3CRET/, text);
    assert.match(reason, /breaks at character \d+|ends too early|does not parse/, text);
  }
});

test('bodies that parse but cannot be kept get a coded 400 on every content type; the server keeps serving', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    const deploymentId = await createDeployment(app, configId, server.id);
    const url = `/v1/guest/deployments/${deploymentId}/signal`;
    const bodies: Array<[string, string]> = [
      ['nested 5,000 deep (it crashed the writer thread before)', `{"deploy_status_code":0,"result":${nested(5000)}}`],
      ['1e400', '{"deploy_status_code":1e400}'],
      ['a lone surrogate', '{"deploy_stdout":"\\ud800","deploy_status_code":0}'],
      ['a __proto__ key', '{"deploy_status_code":0,"__proto__":{"polluted":true}}'],
    ];
    for (const [name, payload] of bodies) {
      for (const contentType of ['application/json', 'text/plain', undefined]) {
        const headers = { ...server.auth, ...(contentType ? { 'content-type': contentType } : {}) };
        const reply = await app.inject({ method: 'POST', url, headers, payload });
        assert.equal(reply.statusCode, 400, `${name} as ${contentType ?? 'no content type'}: ${reply.body.slice(0, 200)}`);
        assert.equal(errorCode(reply), 'ERR_REQUEST_INVALID', name);
      }
    }
    const deep = await app.inject({
      method: 'POST',
      url: '/v1/default/software_configs',
      headers: ADMIN,
      payload: `{"name":"p","options":{"a":${nested(4180)}}}`,
    });
    assert.equal(deep.statusCode, 400, 'a config that could never be read back is not stored');
    // The scaling routes read text/plain themselves (a manual signal may be a plain reason): the same check.
    const scaling = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_groups',
      headers: { ...ADMIN, 'content-type': 'text/plain' },
      payload: `{"name":"g","member_bootstrap":${nested(5000)}}`,
    });
    assert.equal(scaling.statusCode, 400, scaling.body);
    assert.match(scaling.json().error.message, /nested deeper/);
    const still = await app.inject({ url: `/v1/default/software_deployments/${deploymentId}`, headers: ADMIN });
    assert.equal(still.json().software_deployment.status, 'IN_PROGRESS', 'nothing refused changed the deployment');
    // JSON sent as text/plain is JSON (as Heat reads it), and the server still answers.
    const plain = await app.inject({
      method: 'POST',
      url,
      headers: { ...server.auth, 'content-type': 'text/plain' },
      payload: '{"deploy_status_code":0,"result":"ok"}',
    });
    assert.equal(plain.statusCode, 200, plain.body);
    assert.equal(plain.json().status, 'COMPLETE');
  } finally {
    await done();
  }
});

test('URLs the router refuses, ids URL clients rewrite, and oversized bodies get coded errors', async () => {
  const { app, done } = await testApp();
  try {
    const badEncoding = await app.inject({ url: '/v1/default/servers/%E0%A4%A?Signature=secret', headers: ADMIN });
    assert.equal(badEncoding.statusCode, 400);
    assert.equal(errorCode(badEncoding), 'ERR_REQUEST_INVALID');
    assert.match(badEncoding.json().error.message, /percent-encoding/);
    assert.doesNotMatch(badEncoding.body, /secret/, 'the URL is not echoed back');
    const longSegment = await app.inject({ url: `/v1/default/software_configs/${'a'.repeat(600)}`, headers: ADMIN });
    assert.equal(longSegment.statusCode, 400);
    assert.equal(errorCode(longSegment), 'ERR_REQUEST_INVALID');
    assert.match(longSegment.json().error.message, /longer than 512 characters/);
    for (const id of ['.', '..', '...']) {
      const dots = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'x', id } });
      assert.equal(dots.statusCode, 400, `server id ${id}: URL clients rewrite it, so it could never be shown or deleted`);
    }
    const dotted = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'x', id: 'vm.1' } });
    assert.equal(dotted.statusCode, 201);
    const server = await registerServer(app);
    const tooBig = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/00000000-0000-4000-8000-000000000000/heartbeat`,
      headers: server.auth,
      payload: { message: 'x'.repeat(70 * 1024) },
    });
    assert.equal(tooBig.statusCode, 413);
    assert.match(tooBig.json().error.message, /65536 bytes/);
  } finally {
    await done();
  }
});

test('HEAD on the event stream answers at once; an agent may spell its scheme `bearer`', async () => {
  const { app, done } = await testApp();
  try {
    const head = await app.inject({ method: 'HEAD', url: '/v1/default/events/stream', headers: ADMIN });
    assert.equal(head.statusCode, 200);
    assert.match(String(head.headers['content-type']), /text\/event-stream/);
    const server = await registerServer(app);
    const token = server.auth.authorization.slice('Bearer '.length);
    for (const scheme of ['bearer', 'BEARER']) {
      const reply = await app.inject({ url: '/v1/guest/metadata', headers: { authorization: `${scheme} ${token}` } });
      assert.equal(reply.statusCode, 200, scheme);
    }
    const wrong = await app.inject({ url: '/v1/guest/metadata', headers: { authorization: `bearer ${token}x` } });
    assert.equal(wrong.statusCode, 401, 'the scheme is case-insensitive, the secret is not');
  } finally {
    await done();
  }
});

test('If-None-Match: a list, a weak tag or * that names the document answers 304; others 200', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const first = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    const etag = String(first.headers.etag);
    const cases: Array<[string, number]> = [
      [etag, 304],
      [`"other", ${etag}`, 304],
      [`W/${etag}`, 304],
      ['*', 304],
      ['"other"', 200],
      [`W/"other", "another"`, 200],
    ];
    for (const [header, status] of cases) {
      const reply = await app.inject({ url: '/v1/guest/metadata', headers: { ...server.auth, 'if-none-match': header } });
      assert.equal(reply.statusCode, status, header);
    }
    // A long-poll with a list that names the document waits, then answers 304.
    const started = Date.now();
    const held = await app.inject({ url: '/v1/guest/metadata?wait=1', headers: { ...server.auth, 'if-none-match': `"x", ${etag}` } });
    assert.equal(held.statusCode, 304);
    assert.ok(Date.now() - started >= 900, 'it waited');
  } finally {
    await done();
  }
});

test('a body that is not JSON is refused without its text reaching the log', async () => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  const { app, done } = await testApp({ logger: { level: 'info', stream } });
  try {
    const reply = await app.inject({
      method: 'POST',
      url: '/v3/auth/tokens',
      payload: '{"auth":{"identity":{"password":{"user":{"password":S3CRET-PASSWORD}}}}}',
    });
    assert.equal(reply.statusCode, 400);
    assert.equal(errorCode(reply), 'ERR_REQUEST_BODY_MALFORMED');
    assert.doesNotMatch(reply.body, /S3CRET/);
    assert.ok(lines.length > 0, 'the request was logged');
    assert.doesNotMatch(lines.join(''), /S3CRET/);
  } finally {
    await done();
  }
});

test('guest routes authenticate before they read the body: no or a bad credential is a 401 whatever is sent', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const deploymentId = await createDeployment(app, await createConfig(app), server.id);
    const accessKeyId = server.token.split(':')[0]!;
    const callers: Array<[string, Record<string, string>, string]> = [
      ['no credential', {}, 'ERR_AUTH_MISSING'],
      ['a wrong secret', { authorization: `Bearer ${accessKeyId}:wrong` }, 'ERR_AUTH_INVALID'],
      ['an unknown key', { authorization: `Bearer ${'0'.repeat(32)}:wrong` }, 'ERR_AUTH_INVALID'],
    ];
    const bodies: Array<[string, string]> = [
      ['malformed', '{"deploy_status_code":'],
      ['schema-invalid', '{"deploy_status_code":{"not":"a code"},"samples":7,"message":[1]}'],
      ['oversized', `{"deploy_stdout":"${'x'.repeat(1100 * 1024)}"}`],
    ];
    const routes = [
      `/v1/guest/deployments/${deploymentId}/signal`,
      `/v1/guest/deployments/${deploymentId}/heartbeat`,
      '/v1/guest/deployments/not-a-uuid/signal',
      `/v1/guest/deployments/${deploymentId}/signal?unknown=1&action=not-a-uuid`,
      '/v1/guest/metrics',
    ];
    for (const [who, headers, code] of callers) {
      for (const url of routes) {
        for (const [kind, payload] of bodies) {
          const reply = await app.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload });
          assert.equal(reply.statusCode, 401, `${who}, ${kind} body, ${url}: ${reply.body.slice(0, 200)}`);
          assert.equal(errorCode(reply), code, `${who}, ${kind} body, ${url}`);
        }
      }
      const badQuery = await app.inject({ url: '/v1/guest/metadata?wait=soon&extra=1', headers });
      assert.equal(badQuery.statusCode, 401, `${who}, a bad query on metadata: ${badQuery.body.slice(0, 200)}`);
    }
    // The operator's token is a valid credential, but not for the guest API: 403, body unread.
    const operator = await app.inject({ method: 'POST', url: routes[0]!, headers: ADMIN, payload: bodies[0]![1] });
    assert.equal(operator.statusCode, 403, operator.body);
    // A forged or repeated capability token is a bad credential too.
    for (const query of ['?token=forged', '?token=a&token=b', `?token=x&action=a&action=b`]) {
      const reply = await app.inject({ method: 'POST', url: `${routes[0]!}${query}`, payload: bodies[1]![1] });
      assert.equal(reply.statusCode, 401, `${query}: ${reply.body.slice(0, 200)}`);
    }
    const still = await app.inject({ url: `/v1/default/software_deployments/${deploymentId}`, headers: ADMIN });
    assert.equal(still.json().software_deployment.status, 'IN_PROGRESS', 'nothing refused changed the deployment');
    // A valid credential still gets the schema's 400, and the body is read.
    const invalid = await app.inject({ method: 'POST', url: routes[0]!, headers: server.auth, payload: bodies[0]![1] });
    assert.equal(invalid.statusCode, 400);
    assert.equal(errorCode(invalid), 'ERR_REQUEST_BODY_MALFORMED');
  } finally {
    await done();
  }
});

test('a guest request without a credential is refused before its body arrives', async () => {
  const { app, done } = await testApp();
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    // Announces a 1 MiB body and sends none of it: the 401 must come without waiting for it.
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/guest/deployments/00000000-0000-4000-8000-000000000000/signal',
          headers: { 'content-type': 'application/json', 'content-length': String(1024 * 1024) },
          timeout: 5000,
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
          request.destroy();
        },
      );
      request.on('timeout', () => {
        request.destroy();
        reject(new Error('no answer within 5 s: the server waited for the body'));
      });
      request.on('error', reject);
      request.flushHeaders();
    });
    assert.equal(status, 401);
  } finally {
    await done();
  }
});

test("requests Node's HTTP parser refuses get a coded JSON body, and their bytes never reach the log", async () => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  const { app, done } = await testApp({ logger: { level: 'trace', stream } });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const secret = 'Bearer 0123456789abcdef0123456789abcdef:S3CRET-VALUE';
    const cases: Array<[string, string, number, string, RegExp]> = [
      [
        'headers over 16 KiB',
        `GET /v1/guest/metadata HTTP/1.1\r\nHost: h\r\nAuthorization: ${secret}\r\nX-Padding: ${'p'.repeat(20 * 1024)}\r\n\r\n`,
        431,
        'ERR_REQUEST_HEADERS_TOO_LARGE',
        /16384 bytes/,
      ],
      ['a malformed request line', `S3CRET-VALUE /v1/guest/metadata\r\n\r\n`, 400, 'ERR_REQUEST_INVALID', /HPE_INVALID_METHOD/],
      [
        'bad chunked encoding',
        `POST /v1/default/software_configs HTTP/1.1\r\nHost: h\r\nX-Auth-Token: admin-secret\r\nAuthorization: ${secret}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nS3CRET-VALUE\r\n0\r\n\r\n`,
        400,
        'ERR_REQUEST_INVALID',
        /HPE_INVALID_CHUNK_SIZE/,
      ],
    ];
    for (const [name, bytes, status, code, message] of cases) {
      const answer = await rawExchange(port, bytes);
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      assert.match(head, new RegExp(`^HTTP/1.1 ${status} `), `${name}: ${answer.slice(0, 300)}`);
      assert.match(head, /content-type: application\/json/i, name);
      const parsed = JSON.parse(body) as { code: number; error: { code: string; message: string } };
      assert.equal(parsed.code, status, name);
      assert.equal(parsed.error.code, code, name);
      assert.match(parsed.error.message, message, name);
      assert.doesNotMatch(answer, /S3CRET/, `${name}: the request is not echoed back`);
    }
    assert.doesNotMatch(lines.join(''), /S3CRET|X-Padding|pppp/, 'no raw request bytes in the log, even at trace');
    const still = await app.inject({ url: '/healthz' });
    assert.equal(still.statusCode, 200, 'the server keeps serving');
    // A client whose headers are too slow (Node's headersTimeout; fastify turns the whole-request limit off) is told the limit.
    const slow = clientErrorOf('ERR_HTTP_REQUEST_TIMEOUT', app.server);
    assert.equal(slow.statusCode, 408);
    assert.equal(errorBody(slow).error.message, 'The request headers did not arrive within 60 s: send the request again.');
  } finally {
    await done();
  }
});

test('a known path with the wrong method is a 405 with an Allow header; an unknown path stays a 404', async () => {
  const { app, done } = await testApp();
  try {
    const deployment = '/v1/guest/deployments/00000000-0000-4000-8000-000000000000';
    const cases: Array<[string, string, string]> = [
      ['DELETE', '/v1/guest/metadata', 'GET, HEAD'],
      ['POST', '/v1/guest/metadata?wait=5', 'GET, HEAD'],
      ['GET', `${deployment}/signal`, 'POST'],
      ['PUT', `${deployment}/heartbeat/`, 'POST'],
      ['DELETE', '/v1/default/software_configs', 'GET, HEAD, POST'],
    ];
    for (const [method, url, allow] of cases) {
      const reply = await app.inject({ method: method as 'GET', url, payload: method === 'GET' ? undefined : {} });
      assert.equal(reply.statusCode, 405, `${method} ${url}: ${reply.body.slice(0, 200)}`);
      assert.equal(reply.headers.allow, allow, `${method} ${url}`);
      assert.equal(errorCode(reply), 'ERR_METHOD_NOT_ALLOWED');
      assert.equal(reply.json().error.details.path, url.split('?')[0], 'the path, without its query');
    }
    for (const url of ['/v1/guest/nothing', `${deployment}/unknown`, '/v2/nothing']) {
      const reply = await app.inject({ method: 'DELETE', url });
      assert.equal(reply.statusCode, 404, url);
      assert.equal(reply.headers.allow, undefined, url);
      assert.equal(errorCode(reply), 'ERR_ROUTE_NOT_FOUND', url);
    }
  } finally {
    await done();
  }
});
