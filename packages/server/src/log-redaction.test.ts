import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { redactUrl } from './log-redaction.ts';
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
