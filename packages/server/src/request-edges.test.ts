// Requests at the edges of what hearth accepts: bodies that parse but cannot be kept, URLs the
// router refuses, HEAD on a stream, header spellings. Each gets a coded answer and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { bodyProblem, MAX_BODY_DEPTH, syntaxReason } from './body-parser.ts';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from './test-support.ts';

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
      payload: { message: 'x'.repeat(20 * 1024) },
    });
    assert.equal(tooBig.statusCode, 413);
    assert.match(tooBig.json().error.message, /16384 bytes/);
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
