import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { signV2 } from '@hearth/protocol/signing';
import { ADMIN, testApp, waitConditionHandle } from '../../test-support.ts';

const HOST = '127.0.0.1:9';
const FORM = 'application/x-www-form-urlencoded; charset=utf-8';

interface Credential {
  key: string;
  secret: string;
}

/** Creates stack `web` with two POLL_SERVER_CFN servers, vm1 and vm2; returns their EC2 credentials. */
async function twoServers(app: FastifyInstance): Promise<{ vm1: Credential; vm2: Credential }> {
  await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  const create = async (name: string): Promise<Credential> => {
    const reply = await app.inject({
      method: 'POST',
      url: '/v1/default/servers',
      headers: ADMIN,
      payload: { name, software_config_transport: 'POLL_SERVER_CFN', stack: 'web' },
    });
    assert.equal(reply.statusCode, 201, reply.body);
    const { access_key_id: key, secret_access_key: secret } = reply.json<{ credential: Record<string, string> }>().credential;
    return { key: key!, secret: secret! };
  };
  return { vm1: await create('vm1'), vm2: await create('vm2') };
}

/** DescribeStackResource parameters signed with v2 for `method`, as os-collect-config (GET) or a query client (POST) signs them. */
function describeParams(method: 'GET' | 'POST', credential: Credential, resource: string, extra: Record<string, string> = {}) {
  const params: Record<string, string> = {
    Action: 'DescribeStackResource',
    StackName: 'web',
    LogicalResourceId: resource,
    AWSAccessKeyId: credential.key,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
    ...extra,
  };
  params.Signature = signV2(credential.secret, 'sha256', method, HOST, '/v1/', params);
  return new URLSearchParams(params).toString();
}

const getQuery = (app: FastifyInstance, query: string) => app.inject({ method: 'GET', url: `/v1/?${query}`, headers: { host: HOST } });

const postForm = (app: FastifyInstance, body: string, query = '', headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: `/v1/${query}`, headers: { host: HOST, 'content-type': FORM, ...headers }, payload: body });

/** The reply with the one field that changes per request (the time it was read) blanked. */
const stable = (reply: LightMyRequestResponse) => reply.body.replace(/<LastUpdatedTimestamp>[^<]*</, '<LastUpdatedTimestamp><');

/** SigV4 headers for a form POST to /v1/ as botocore's query protocol sends it (Authorization header, the body hashed). */
function sigV4Headers(credential: Credential, body: string): Record<string, string> {
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/RegionOne/cloudformation/aws4_request`;
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const canonical = ['POST', '/v1/', '', `host:${HOST}\nx-amz-date:${amzDate}\n`, 'host;x-amz-date', sha256(body)].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const signingKey = [day, 'RegionOne', 'cloudformation', 'aws4_request'].reduce<Buffer>(
    (key, part) => createHmac('sha256', key).update(part).digest(),
    Buffer.from(`AWS4${credential.secret}`),
  );
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  return {
    'x-amz-date': amzDate,
    authorization: `AWS4-HMAC-SHA256 Credential=${credential.key}/${scope},SignedHeaders=host;x-amz-date,Signature=${signature}`,
  };
}

test('DescribeStackResource as a signed form POST answers exactly as the signed GET does (XML, and JSON on request)', async () => {
  const { app, done } = await testApp();
  try {
    const { vm1 } = await twoServers(app);
    const get = await getQuery(app, describeParams('GET', vm1, 'vm1'));
    assert.equal(get.statusCode, 200, get.body);
    const post = await postForm(app, describeParams('POST', vm1, 'vm1'));
    assert.equal(post.statusCode, 200, post.body);
    assert.equal(post.headers['content-type'], get.headers['content-type']);
    assert.match(post.body, /^<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail>/);
    assert.equal(stable(post), stable(get));

    const json = await postForm(app, describeParams('POST', vm1, 'vm1', { ContentType: 'JSON' }));
    assert.equal(json.statusCode, 200, json.body);
    assert.match(json.headers['content-type'] as string, /^application\/json/);
    assert.equal(json.json().DescribeStackResourceResponse.DescribeStackResourceResult.StackResourceDetail.LogicalResourceId, 'vm1');
  } finally {
    await done();
  }
});

test('DescribeStackResource as a form POST signed with SigV4 (botocore) is served; a changed body is not', async () => {
  const { app, done } = await testApp();
  try {
    const { vm1 } = await twoServers(app);
    const body = new URLSearchParams({ Action: 'DescribeStackResource', StackName: 'web', LogicalResourceId: 'vm1' }).toString();
    const v4 = await postForm(app, body, '', sigV4Headers(vm1, body));
    assert.equal(v4.statusCode, 200, v4.body);
    assert.match(v4.body, /<LogicalResourceId>vm1<\/LogicalResourceId>/);
    const changed = await postForm(app, body.replace('vm1', 'vm2'), '', sigV4Headers(vm1, body));
    assert.equal(changed.statusCode, 403, changed.body);
  } finally {
    await done();
  }
});

test('a form POST is refused as the GET is: bad signature, another resource, tampered body, signed for GET', async () => {
  const { app, done } = await testApp();
  try {
    const { vm1, vm2 } = await twoServers(app);
    const denied = (reply: LightMyRequestResponse, what: string) => {
      assert.equal(reply.statusCode, 403, `${what}: ${reply.body}`);
      assert.match(reply.body, /<Code>AccessDenied<\/Code>/, what);
      assert.doesNotMatch(reply.body, /StackResourceDetail/, what);
    };
    const wrongSecret = { key: vm1.key, secret: 'not-the-secret' };
    denied(await getQuery(app, describeParams('GET', wrongSecret, 'vm1')), 'GET, bad signature');
    denied(await postForm(app, describeParams('POST', wrongSecret, 'vm1')), 'POST, bad signature');

    // vm1's keys asking for vm2's resource: the signature is good, the scope is not.
    const foreignGet = await getQuery(app, describeParams('GET', vm1, 'vm2'));
    const foreignPost = await postForm(app, describeParams('POST', vm1, 'vm2'));
    denied(foreignGet, 'GET, another resource');
    denied(foreignPost, 'POST, another resource');
    assert.equal(foreignPost.body, foreignGet.body);
    assert.doesNotMatch(foreignPost.body, new RegExp(vm2.key));
    // It names the stack by name and id apart: `name/id` would read as a StackName to send, and it is not one.
    assert.match(foreignGet.body, /reaches only resource vm1 of stack web \(id [\w-]+\)/);

    const tampered = describeParams('POST', vm2, 'vm2').replace('LogicalResourceId=vm2', 'LogicalResourceId=vm1');
    denied(await postForm(app, tampered), 'POST, body changed after signing');
    denied(await postForm(app, describeParams('GET', vm1, 'vm1')), 'POST of parameters signed for GET');
    denied(await getQuery(app, describeParams('POST', vm1, 'vm1')), 'GET of parameters signed for POST');
  } finally {
    await done();
  }
});

test('a form POST reads its parameters from the body: the query string cannot override or add to what was signed', async () => {
  const { app, done } = await testApp();
  try {
    const { vm1 } = await twoServers(app);
    const body = describeParams('POST', vm1, 'vm1');
    // A query parameter the body also carries is the body's: vm1 is described, not vm2.
    const overridden = await postForm(app, body, '?LogicalResourceId=vm2&StackName=other');
    assert.equal(overridden.statusCode, 200, overridden.body);
    assert.match(overridden.body, /<LogicalResourceId>vm1<\/LogicalResourceId>/);
    // A query parameter the body lacks is read too, so it must be signed: added afterwards, it is refused.
    const added = await postForm(app, body, '?ContentType=JSON');
    assert.equal(added.statusCode, 403, added.body);
    assert.match(added.json().ErrorResponse.Error.Code as string, /AccessDenied/);
    const signature = await postForm(app, body, `?Signature=${encodeURIComponent('AAAA')}`);
    assert.equal(signature.statusCode, 200, 'the body Signature is the one checked');
  } finally {
    await done();
  }
});

test('an action the CFN route does not serve is named in the refusal, whether it comes in the query or the form', async () => {
  const { app, done } = await testApp();
  try {
    const inForm = await postForm(app, 'Action=ListStacks&StackName=web');
    assert.equal(inForm.statusCode, 400, inForm.body);
    assert.match(inForm.body, /Action 'ListStacks' is not served here; guests use DescribeStackResource and PutMetricData/);
    const inQuery = await getQuery(app, 'Action=ListStacks');
    assert.equal(inQuery.statusCode, 400);
    assert.match(inQuery.body, /Action 'ListStacks' is not served here/);
    const none = await postForm(app, 'StackName=web');
    assert.equal(none.statusCode, 400);
    assert.match(none.body, /names no Action/);
    // The body's Action is the one served, not the query's.
    const mixed = await postForm(app, 'Action=ListStacks', '?Action=DescribeStackResource');
    assert.equal(mixed.statusCode, 400);
    assert.match(mixed.body, /Action 'ListStacks' is not served here/);
  } finally {
    await done();
  }
});

test('a parameter added to a signed URL (__proto__ too) breaks its signature; one named twice is refused', async () => {
  const { app, done } = await testApp();
  try {
    const handle = await waitConditionHandle(app);
    const put = (search: string) =>
      app.inject({
        method: 'PUT',
        url: handle.pathname + search,
        headers: { host: handle.host },
        payload: { Status: 'SUCCESS', Reason: 'up', UniqueId: 'i1', Data: 'ok' },
      });
    for (const extra of ['__proto__=x', 'constructor=x', 'extra=x']) {
      const refused = await put(`${handle.search}&${extra}`);
      assert.equal(refused.statusCode, 403, `${extra}: ${refused.body}`);
    }
    // A name given twice: the signature covers the first value only, so the URL is refused whatever the values.
    for (const extra of ['SignatureMethod=HmacSHA1', 'Timestamp=', 'Signature=x', 'AWSAccessKeyId=0']) {
      const refused = await put(`${handle.search}&${extra}`);
      assert.equal(refused.statusCode, 403, `${extra}: ${refused.body}`);
      assert.match(refused.body, /more than once/, extra);
    }
    assert.equal((await put(handle.search)).statusCode, 200, 'the URL as signed works');
  } finally {
    await done();
  }
});

test('signature failures get the CFN codes the reference names: IncompleteSignature 400, MissingAuthenticationToken and InvalidClientTokenId 403', async () => {
  const { app, done } = await testApp();
  try {
    const { vm1 } = await twoServers(app);
    const codeOf = (reply: LightMyRequestResponse) => /<Code>([^<]*)<\/Code>/.exec(reply.body)?.[1];
    const signed = new URLSearchParams(describeParams('GET', vm1, 'vm1'));

    const unsigned = new URLSearchParams(signed);
    unsigned.delete('Signature');
    const noSignature = await getQuery(app, unsigned.toString());
    assert.equal(noSignature.statusCode, 400, noSignature.body);
    assert.equal(codeOf(noSignature), 'IncompleteSignature');
    assert.match(noSignature.body, /carries no signature/);

    const oldVersion = await getQuery(app, describeParams('GET', vm1, 'vm1', { SignatureVersion: '1' }));
    assert.equal(oldVersion.statusCode, 400, oldVersion.body);
    assert.equal(codeOf(oldVersion), 'IncompleteSignature');

    const keyless = new URLSearchParams(signed);
    keyless.delete('AWSAccessKeyId');
    const noKey = await getQuery(app, keyless.toString());
    assert.equal(noKey.statusCode, 403, noKey.body);
    assert.equal(codeOf(noKey), 'MissingAuthenticationToken');

    const unknown = await getQuery(app, describeParams('GET', { key: 'AKunknownkey0000', secret: vm1.secret }, 'vm1'));
    assert.equal(unknown.statusCode, 403, unknown.body);
    assert.equal(codeOf(unknown), 'InvalidClientTokenId');

    // A signature that does not match stays Heat's AccessDenied (Keystone's 401), with the JSON body too.
    const wrong = await getQuery(app, describeParams('GET', { key: vm1.key, secret: 'not-the-secret' }, 'vm1', { ContentType: 'JSON' }));
    assert.equal(wrong.statusCode, 403, wrong.body);
    assert.equal(wrong.json().ErrorResponse.Error.Code, 'AccessDenied');
    for (const reply of [noSignature, oldVersion, noKey, unknown, wrong]) assert.doesNotMatch(reply.body, /StackResourceDetail/);
  } finally {
    await done();
  }
});

test('a SigV4 request signing a header named like an object property (constructor, __proto__) is AccessDenied, not a 500', async () => {
  const { app, done } = await testApp();
  try {
    const { vm1 } = await twoServers(app);
    const body = 'Action=DescribeStackResource&StackName=web&LogicalResourceId=vm1';
    for (const name of ['constructor', '__proto__']) {
      const headers = sigV4Headers(vm1, body);
      headers.authorization = headers.authorization!.replace('SignedHeaders=host;x-amz-date', `SignedHeaders=host;${name}`);
      const post = await postForm(app, body, '', headers);
      assert.equal(post.statusCode, 403, post.body);
      assert.match(post.body, new RegExp(`<Code>AccessDenied</Code><Message>[^<]*the signed header '${name}' is not in the request`));
      const get = await app.inject({ method: 'GET', url: `/v1/?${body}&ContentType=JSON`, headers: { host: HOST, ...headers } });
      assert.equal(get.statusCode, 403, get.body);
      assert.equal(get.json().ErrorResponse.Error.Code, 'AccessDenied');
    }
  } finally {
    await done();
  }
});
