import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { errorForLog, redactUrl } from './log-redaction.ts';
import { testApp, waitConditionHandle } from './test-support.ts';

test('redactUrl hides the secret query parameters and leaves the rest as it was', () => {
  assert.equal(
    redactUrl('/v1/signal/arn?SignatureMethod=HmacSHA256&AWSAccessKeyId=ak123&Timestamp=2024-01-01T00%3A00%3A00Z&Signature=c2lnbg%3D%3D'),
    '/v1/signal/arn?SignatureMethod=HmacSHA256&AWSAccessKeyId=***&Timestamp=2024-01-01T00%3A00%3A00Z&Signature=***',
  );
  assert.equal(
    redactUrl('/v1/swift/v1/AUTH_p/c/o?temp_url_sig=abc&temp_url_expires=1'),
    '/v1/swift/v1/AUTH_p/c/o?temp_url_sig=***&temp_url_expires=1',
  );
  assert.equal(
    redactUrl('/v1/guest/deployments/d/signal?token=t0k&action=CREATE'),
    '/v1/guest/deployments/d/signal?token=***&action=CREATE',
  );
  assert.equal(
    redactUrl('/v1/?X-Amz-Credential=ak%2F20240101&X-Amz-Signature=f00&X-Amz-Security-Token=s'),
    '/v1/?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Security-Token=***',
  );
  assert.equal(redactUrl('/v1/default/stacks?limit=2'), '/v1/default/stacks?limit=2');
  assert.equal(redactUrl('/healthz'), '/healthz');
  assert.equal(redactUrl('/v1/?Signature'), '/v1/?Signature', 'a name without a value has nothing to hide');
});

test('redactUrl compares names decoded and in any case, as the query parser reads them', () => {
  assert.equal(redactUrl('/v1/w?Signatur%65=s3cr3t&a=1'), '/v1/w?Signatur%65=***&a=1');
  assert.equal(redactUrl('/v1/w?AWSAccessKeyI%64=ak&a=1'), '/v1/w?AWSAccessKeyI%64=***&a=1');
  assert.equal(redactUrl('/v1/s?temp_url_si%67=sig'), '/v1/s?temp_url_si%67=***');
  assert.equal(redactUrl('/v1/s?%74%6F%6B%65%6E=t'), '/v1/s?%74%6F%6B%65%6E=***');
  assert.equal(redactUrl('/v1/s?X%2DAmz%2DSignature=f'), '/v1/s?X%2DAmz%2DSignature=***');
  assert.equal(redactUrl('/v1/w?SIGNATURE=s&signature=t'), '/v1/w?SIGNATURE=***&signature=***');
  assert.equal(redactUrl('/v1/w?Signature=a=b%3D&x=1'), '/v1/w?Signature=***&x=1', 'the whole value, = included');
  assert.equal(redactUrl('/v1/w?Signature[]=s&token%5B0%5D=t&a[]=1'), '/v1/w?Signature[]=***&token%5B0%5D=***&a[]=1', 'array spellings');
});

test('redactUrl never throws: a name that does not decode is hidden, and so is one that begins after ; ? or #', () => {
  assert.equal(redactUrl('/v1/w?Sig%ZZnature=s&a=1'), '/v1/w?Sig%ZZnature=***&a=1');
  assert.equal(redactUrl('/v1/w?%E0%A4%A=x&Signature=s'), '/v1/w?%E0%A4%A=***&Signature=***');
  assert.equal(redactUrl('/v1/w?a=1;Signature=s;b=2&c=3'), '/v1/w?a=1;Signature=***&c=3');
  assert.equal(redactUrl('/v1/w#frag?Signature=s&a=1'), '/v1/w#frag?Signature=***&a=1');
  assert.equal(redactUrl('/v1/w?a=%ZZ&b=1'), '/v1/w?a=%ZZ&b=1', 'a malformed value under a plain name is not a secret');
});

test("the request log shows no wait-condition signature even when the URL spells the parameter's name percent-encoded", async () => {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const { app, done } = await testApp({ logger: { level: 'info', stream } });
  try {
    const handleUrl = await waitConditionHandle(app);
    const signature = handleUrl.searchParams.get('Signature')!;
    const accessKey = handleUrl.searchParams.get('AWSAccessKeyId')!;
    const query = handleUrl.search.replace('Signature=', 'Signatur%65=').replace('AWSAccessKeyId=', 'AWSAccessKeyI%64=');
    const signal = await app.inject({
      method: 'PUT',
      url: handleUrl.pathname + query,
      headers: { host: handleUrl.host },
      payload: { Status: 'SUCCESS', Reason: 'up', UniqueId: 'i1', Data: 'ok' },
    });
    assert.equal(signal.statusCode, 200, `the server reads the encoded names: ${signal.body}`);
    await new Promise((resolve) => setImmediate(resolve));
    const logged = lines.filter((line) => line.includes('/v1/waitcondition/'));
    assert.ok(logged.length > 0, 'the request was logged');
    for (const line of logged) {
      assert.ok(!line.includes(signature) && !line.includes(encodeURIComponent(signature)), `signature in the log: ${line}`);
      assert.ok(!line.includes(accessKey), `access key in the log: ${line}`);
    }
    assert.match(logged[0]!, /Signatur%65=\*\*\*/);
  } finally {
    await done();
  }
});

test('errorForLog keeps what names a failure, follows causes, and leaves out whatever else an error carries', () => {
  const refused = Object.assign(new Error('new row violates check constraint "c"'), {
    code: '23514',
    constraint: 'c',
    detail: 'Failing row contains (id, #!/bin/sh PASSWORD=s3cr3t)',
    client: { secretKey: 1234, connectionParameters: { user: 'u' } },
  });
  const wrapped = new Error('write failed', { cause: refused });
  const logged = errorForLog(wrapped);
  assert.equal(logged.type, 'Error');
  assert.equal(logged.message, 'write failed');
  assert.match(String(logged.stack), /write failed/);
  assert.deepEqual(Object.keys(logged.cause as object).sort(), ['code', 'constraint', 'message', 'stack', 'type']);
  assert.ok(!JSON.stringify(logged).includes('s3cr3t') && !JSON.stringify(logged).includes('secretKey'));
  const aggregate = errorForLog(
    new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED', port: 5432 })], 'all failed'),
  );
  assert.deepEqual(
    (aggregate.errors as Array<Record<string, unknown>>).map(({ code, port }) => ({ code, port })),
    [{ code: 'ECONNREFUSED', port: 5432 }],
  );
  const looped = new Error('loop');
  (looped as { cause?: unknown }).cause = looped;
  assert.doesNotThrow(() => JSON.stringify(errorForLog(looped)), 'a cause that points back is followed a few levels, not forever');
  // pino hands the serializer whatever was logged under `err`.
  assert.equal(errorForLog('a string' as unknown as Error), 'a string');
});

test('redactUrl hides the user and password of an absolute URL, as a request line may carry one', () => {
  assert.equal(redactUrl('http://agent:pw@127.0.0.1:8000/healthz?token=t'), 'http://***@127.0.0.1:8000/healthz?token=***');
  assert.equal(redactUrl('HTTP://a:b@c@127.0.0.1/x'), 'HTTP://***@127.0.0.1/x', 'up to the last @ before the path');
  assert.equal(redactUrl('/v1/x?note=a:b@c'), '/v1/x?note=a:b@c', 'an @ in a path or query is not a user');
  assert.equal(redactUrl('http://127.0.0.1/a@b'), 'http://127.0.0.1/a@b');
});

test('a request line in absolute form is logged without the user and password it names', async () => {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const { app, done } = await testApp({ logger: { level: 'info', stream } });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const password = 'absolute-form-password';
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(port, '127.0.0.1', () =>
        socket.write(`GET http://agent:${password}@127.0.0.1:${port}/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`),
      );
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 200 /, 'Node and fastify serve the absolute form');
    const logged = lines.filter((line) => line.includes('/healthz'));
    assert.ok(logged.length > 0, 'the request was logged');
    for (const line of lines) assert.ok(!line.includes(password), `the password in the log: ${line}`);
    assert.match(logged[0]!, /http:\/\/\*\*\*@127\.0\.0\.1:\d+\/healthz/);
  } finally {
    await done();
  }
});
