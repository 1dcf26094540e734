import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { resourceArn } from './arn.ts';
import { extractEc2Credential, verifyEc2Signature, type Ec2Request } from './ec2-signature.ts';
import { presignV2Url } from './ec2-sign-v2.ts';
import { parseArn } from './arn.ts';

const SECRET = 's3cr3t-example';
const ACCESS = '0123456789abcdef0123456789abcdef';
const STACK_ID = '5f1c2a3e-0000-4000-8000-000000000001';
const SIGNAL_PATH = `/v1/signal/arn:openstack:heat::tenant1:stacks/mystack/${STACK_ID}/resources/deployment`;

/** The deployment-signal request of reference/server.md §1.4. */
function signalRequest(overrides: Partial<Ec2Request> = {}, params: Record<string, string> = {}): Ec2Request {
  return {
    method: 'POST',
    host: 'heat.example.com:8000',
    path: SIGNAL_PATH,
    params: {
      AWSAccessKeyId: ACCESS,
      SignatureMethod: 'HmacSHA256',
      SignatureVersion: '2',
      Timestamp: '2024-01-01T00:00:00Z',
      Signature: 'S+4NuFlmkeq5v5Df/WMwViqlryHrwj1mJCeAn5aFtqE=',
      ...params,
    },
    headers: {},
    ...overrides,
  };
}

/** URL as a client sends it, parsed back into what the server sees: Host with port, decoded path, decoded query. */
function requestFromUrl(method: string, url: string): Ec2Request {
  const parsed = new URL(url);
  return {
    method,
    host: parsed.host,
    path: decodeURIComponent(parsed.pathname),
    params: Object.fromEntries(parsed.searchParams),
    headers: { host: parsed.host },
  };
}

test('§1.4 vector: deployment signal, host with port', () => {
  assert.deepEqual(verifyEc2Signature(signalRequest(), SECRET), { ok: true });
});

test('§1.4 vector: signature over the host without port is accepted by the port fallback', () => {
  const request = signalRequest({}, { Signature: 'pFxqp3CpohPmO5LFjWALWvVgaqTRW6CMXoXWa3Twjq4=' });
  assert.deepEqual(verifyEc2Signature(request, SECRET), { ok: true });
  // The fallback only strips a port: the bare-host signature does not match another host.
  assert.equal(verifyEc2Signature({ ...request, host: 'other.example.com:8000' }, SECRET).ok, false);
});

test('§1.4 vector: os-collect-config poll without SignatureMethod (the signer adds it)', () => {
  const request: Ec2Request = {
    method: 'GET',
    host: 'heat.example.com:8000',
    path: '/v1/',
    params: {
      AWSAccessKeyId: ACCESS,
      Action: 'DescribeStackResource',
      LogicalResourceId: 'server',
      SignatureVersion: '2',
      StackName: 'mystack',
      Signature: 'i+Zi+Mv7S/6/GY54reL/fXrHZnnEfN0MGn0O/quvNbM=',
    },
    headers: { 'content-type': 'application/json' },
  };
  assert.deepEqual(extractEc2Credential(request), { ok: true, accessKeyId: ACCESS, version: 2 });
  assert.deepEqual(verifyEc2Signature(request, SECRET), { ok: true });
  // SignatureMethod is forced to HmacSHA256, whatever the client claims (Keystone's signer).
  assert.deepEqual(verifyEc2Signature({ ...request, params: { ...request.params, SignatureMethod: 'HmacSHA256' } }, SECRET), { ok: true });
});

test('a wrong secret does not match', () => {
  const result = verifyEc2Signature(signalRequest(), 'not-the-secret');
  assert.equal(result.ok, false);
  assert.equal(!result.ok && result.code, 'SignatureDoesNotMatch');
});

test('a tampered parameter, verb or path does not match', () => {
  for (const request of [
    signalRequest({}, { Timestamp: '2024-01-01T00:00:01Z' }),
    signalRequest({}, { Extra: '1' }),
    signalRequest({ method: 'PUT' }),
    signalRequest({ path: SIGNAL_PATH.replace('deployment', 'other') }),
    signalRequest({}, { Signature: 'S+4NuFlmkeq5v5Df/WMwViqlryHrwj1mJCeAn5aFtqE' }),
  ]) {
    const result = verifyEc2Signature(request, SECRET);
    assert.equal(!result.ok && result.code, 'SignatureDoesNotMatch');
  }
});

test('a + decoded to a space in the Signature is still accepted', () => {
  assert.deepEqual(verifyEc2Signature(signalRequest({}, { Signature: 'S 4NuFlmkeq5v5Df/WMwViqlryHrwj1mJCeAn5aFtqE=' }), SECRET), {
    ok: true,
  });
});

test('HmacSHA1 is verified when SignatureMethod says so', () => {
  const params = { AWSAccessKeyId: ACCESS, SignatureMethod: 'HmacSHA1', SignatureVersion: '2', Timestamp: '2024-01-01T00:00:00Z' };
  const stringToSign = `POST\nheat.example.com:8000\n${SIGNAL_PATH}\nAWSAccessKeyId=${ACCESS}&SignatureMethod=HmacSHA1&SignatureVersion=2&Timestamp=2024-01-01T00%3A00%3A00Z`;
  const Signature = createHmac('sha1', SECRET).update(stringToSign).digest('base64');
  assert.deepEqual(verifyEc2Signature(signalRequest({ params: { ...params, Signature } }), SECRET), { ok: true });
  // The same SHA-1 signature is not accepted when the request claims HmacSHA256.
  const claimed256 = verifyEc2Signature(signalRequest({ params: { ...params, SignatureMethod: 'HmacSHA256', Signature } }), SECRET);
  assert.equal(claimed256.ok, false);
});

test('missing Signature is IncompleteSignature, missing access key is MissingAuthenticationToken', () => {
  const { Signature: _s, ...unsigned } = signalRequest().params;
  const noSignature = signalRequest({ params: unsigned });
  assert.equal((extractEc2Credential(noSignature) as { code: string }).code, 'IncompleteSignature');
  assert.equal((verifyEc2Signature(noSignature, SECRET) as { code: string }).code, 'IncompleteSignature');

  const { AWSAccessKeyId: _a, ...anonymous } = signalRequest().params;
  assert.equal((extractEc2Credential(signalRequest({ params: anonymous })) as { code: string }).code, 'MissingAuthenticationToken');
  assert.equal(verifyEc2Signature(signalRequest({ params: anonymous }), SECRET).ok, false);
});

test('signature versions 0 and 1, unknown versions and a missing version are refused clearly', () => {
  for (const [version, fragment] of [
    ['0', 'SignatureVersion 0 is not accepted'],
    ['1', 'SignatureVersion 1 is not accepted'],
    ['3', "unknown SignatureVersion '3'"],
  ] as const) {
    const result = extractEc2Credential(signalRequest({}, { SignatureVersion: version }));
    assert.equal(!result.ok && result.code, 'IncompleteSignature');
    assert.match(!result.ok ? result.message : '', new RegExp(fragment));
  }
  const { SignatureVersion: _v, ...noVersion } = signalRequest().params;
  const result = verifyEc2Signature(signalRequest({ params: noVersion }), SECRET);
  assert.equal(!result.ok && result.code, 'IncompleteSignature');
});

test('Timestamp: expired with a TTL, fine without one, fine within it, and must parse', () => {
  const now = new Date('2024-01-01T00:20:00Z');
  const expired = verifyEc2Signature(signalRequest(), SECRET, { now, ttlSeconds: 900 });
  assert.equal(!expired.ok && expired.code, 'RequestExpired');
  assert.deepEqual(verifyEc2Signature(signalRequest(), SECRET, { now, ttlSeconds: null }), { ok: true });
  assert.deepEqual(verifyEc2Signature(signalRequest(), SECRET, { now }), { ok: true });
  assert.deepEqual(verifyEc2Signature(signalRequest(), SECRET, { now: new Date('2024-01-01T00:15:00Z'), ttlSeconds: 900 }), { ok: true });
  // A future Timestamp is not rejected (Keystone does not either).
  assert.deepEqual(verifyEc2Signature(signalRequest(), SECRET, { now: new Date('2023-12-31T00:00:00Z'), ttlSeconds: 900 }), { ok: true });
  const garbled = verifyEc2Signature(signalRequest({}, { Timestamp: 'yesterday' }), SECRET);
  assert.equal(!garbled.ok && garbled.code, 'IncompleteSignature');
  const impossible = verifyEc2Signature(signalRequest({}, { Timestamp: '2024-02-30T00:00:00Z' }), SECRET);
  assert.equal(!impossible.ok && impossible.code, 'IncompleteSignature');
});

test('an expired request with a bad signature reports the signature, not the expiry', () => {
  const result = verifyEc2Signature(signalRequest(), 'wrong', { now: new Date('2030-01-01T00:00:00Z'), ttlSeconds: 900 });
  assert.equal(!result.ok && result.code, 'SignatureDoesNotMatch');
});

test('presignV2Url matches a URL built the way Heat builds it (python3 urllib + hmac)', () => {
  // Produced with python3: quote(arn) for the path, sorted CQS with quote(v, safe='-_~'), base64
  // HMAC-SHA256 over 'POST\nheat.example.com:8000\n' + unquote(path) + '\n' + CQS, urlencode(params).
  const url = presignV2Url({
    method: 'POST',
    baseUrl: 'http://Heat.Example.com:8000/v1/signal',
    arn: 'arn:openstack:heat::proj%20one:stacks/s/id/resources/r',
    accessKeyId: ACCESS,
    secret: 'x',
    timestamp: new Date('2024-01-01T00:00:00Z'),
  });
  assert.equal(
    url,
    'http://heat.example.com:8000/v1/signal/arn%3Aopenstack%3Aheat%3A%3Aproj%2520one%3Astacks/s/id/resources/r' +
      '?SignatureMethod=HmacSHA256&SignatureVersion=2&AWSAccessKeyId=0123456789abcdef0123456789abcdef' +
      '&Timestamp=2024-01-01T00%3A00%3A00Z&Signature=WeqfAP5HssNjCGw%2FG6zgKARHWzSyVQkQQmwpBSgzvlM%3D',
  );
});

test('presignV2Url round trip: the URL parsed back verifies, the ARN comes back, changes are caught', () => {
  const arn = resourceArn('proj one/ü', 'mystack', STACK_ID, 'deployment');
  const url = presignV2Url({ method: 'POST', baseUrl: 'http://127.0.0.1:8000/v1/signal', arn, accessKeyId: ACCESS, secret: SECRET });
  const request = requestFromUrl('POST', url);
  assert.equal(request.path, `/v1/signal/${arn}`);
  assert.equal(parseArn(request.path.slice('/v1/signal/'.length))?.project, 'proj one/ü');
  assert.deepEqual(verifyEc2Signature(request, SECRET, { ttlSeconds: 900 }), { ok: true });
  assert.equal(verifyEc2Signature({ ...request, method: 'PUT' }, SECRET).ok, false);
  assert.equal(verifyEc2Signature(requestFromUrl('POST', url.replace('deployment', 'deploymenu')), SECRET).ok, false);
});

test('presignV2Url without Timestamp never expires; with one it does', () => {
  const base = {
    method: 'PUT' as const,
    baseUrl: 'http://127.0.0.1:8000/v1/waitcondition/',
    arn: `arn:openstack:heat::p:stacks/s/${STACK_ID}/resources/h`,
  };
  const forever = presignV2Url({ ...base, accessKeyId: ACCESS, secret: SECRET, timestamp: null });
  assert.doesNotMatch(forever, /Timestamp=/);
  assert.match(forever, /^http:\/\/127\.0\.0\.1:8000\/v1\/waitcondition\/arn%3Aopenstack/);
  assert.deepEqual(verifyEc2Signature(requestFromUrl('PUT', forever), SECRET, { now: new Date('2099-01-01T00:00:00Z'), ttlSeconds: 900 }), {
    ok: true,
  });
  const dated = presignV2Url({ ...base, accessKeyId: ACCESS, secret: SECRET, timestamp: new Date('2024-01-01T00:00:00Z') });
  const result = verifyEc2Signature(requestFromUrl('PUT', dated), SECRET, { now: new Date('2024-01-01T01:00:00Z'), ttlSeconds: 900 });
  assert.equal(!result.ok && result.code, 'RequestExpired');
});

test('presignV2Url refuses a base URL with a query', () => {
  assert.throws(
    () => presignV2Url({ method: 'POST', baseUrl: 'http://h/v1/signal?x=1', arn: 'a', accessKeyId: ACCESS, secret: SECRET }),
    /without a query/,
  );
});

// SigV4 vectors produced by Debian 12's boto 2.49 (python3-boto, pulled in by heat-cfntools), run with
// BOTO_CONFIG = [Boto] cfn_region_name=heat, cfn_region_endpoint=127.0.0.1 exactly as Heat writes it,
// boto.auth's utcnow patched to 2024-01-01T00:00:05, and the connection's _mexe replaced by one that calls
// request.authorize() and records method, path, params, headers and body instead of sending:
//   CloudFormationConnection(AK, SECRET, is_secure=False, port=8000, path='/v1').describe_stack_resource('mystack', 'server')
//   CloudWatchConnection(AK, SECRET, is_secure=False, port=8003, path='/v1', region=RegionInfo('heat', '127.0.0.1'))
//     .put_metric_data('system/linux', 'MemoryUtilization', value=42.5, unit='Percent', dimensions={'InstanceId': 'i-1'})
// boto derived region `0` and service `127` from the host name, and sent no spaces after the commas.
const BOTO_DESCRIBE: Ec2Request = {
  method: 'GET',
  host: '127.0.0.1:8000',
  path: '/v1/',
  params: {
    Action: 'DescribeStackResource',
    ContentType: 'JSON',
    LogicalResourceId: 'server',
    StackName: 'mystack',
    Version: '2010-05-15',
  },
  headers: {
    host: '127.0.0.1:8000',
    'user-agent': 'Boto/2.49.0 Python/3.11.2 Linux/6.18.44-fc-v657',
    'x-amz-date': '20240101T000005Z',
    authorization:
      'AWS4-HMAC-SHA256 Credential=0123456789abcdef0123456789abcdef/20240101/0/127/aws4_request,SignedHeaders=host;x-amz-date,' +
      'Signature=01cce7b5e0218dff5d3ccf816418cfe8ecd35e0a28018e0c7f83d7fdb7ac3db9',
  },
  body: '',
};

const PUT_METRIC_BODY =
  'Action=PutMetricData&MetricData.member.1.Dimensions.member.1.Name=InstanceId&MetricData.member.1.Dimensions.member.1.Value=i-1' +
  '&MetricData.member.1.MetricName=MemoryUtilization&MetricData.member.1.Unit=Percent&MetricData.member.1.Value=42.5' +
  '&Namespace=system%2Flinux&Version=2010-08-01';
const BOTO_PUT_METRIC: Ec2Request = {
  method: 'POST',
  host: '127.0.0.1:8003',
  path: '/v1/',
  params: Object.fromEntries(new URLSearchParams(PUT_METRIC_BODY)),
  headers: {
    host: '127.0.0.1:8003',
    'content-type': 'application/x-www-form-urlencoded; charset=UTF-8',
    'x-amz-date': '20240101T000005Z',
    authorization:
      'AWS4-HMAC-SHA256 Credential=0123456789abcdef0123456789abcdef/20240101/0/127/aws4_request,SignedHeaders=host;x-amz-date,' +
      'Signature=1f21b895bfbceb356ef1d3bb83db27a84537ade8db32af79cc77e335892d03d1',
  },
  body: Buffer.from(PUT_METRIC_BODY),
};

test('SigV4 from boto (cfn-get-metadata): GET DescribeStackResource verifies, scope from the header', () => {
  assert.deepEqual(extractEc2Credential(BOTO_DESCRIBE), { ok: true, accessKeyId: ACCESS, version: 4 });
  assert.deepEqual(verifyEc2Signature(BOTO_DESCRIBE, SECRET), { ok: true });
  // The same header written with spaces after the commas, as the AWS documentation shows it.
  const spaced = String(BOTO_DESCRIBE.headers.authorization).replaceAll(',', ', ');
  assert.deepEqual(verifyEc2Signature({ ...BOTO_DESCRIBE, headers: { ...BOTO_DESCRIBE.headers, authorization: spaced } }, SECRET), {
    ok: true,
  });
});

test('SigV4 from boto (cfn-push-stats): form POST verifies over the body hash', () => {
  assert.deepEqual(verifyEc2Signature(BOTO_PUT_METRIC, SECRET), { ok: true });
  const tamperedBody = PUT_METRIC_BODY.replace('42.5', '99.5');
  const tampered = { ...BOTO_PUT_METRIC, body: tamperedBody, params: Object.fromEntries(new URLSearchParams(tamperedBody)) };
  assert.equal(verifyEc2Signature(tampered, SECRET).ok, false);
  // A parameter smuggled into the query string of the signed POST is not covered by the body hash.
  const smuggled = { ...BOTO_PUT_METRIC, params: { ...BOTO_PUT_METRIC.params, Namespace2: 'x' } };
  assert.equal(verifyEc2Signature(smuggled, SECRET).ok, false);
});

test('SigV4: a changed query, wrong secret, host or stale date fails', () => {
  const changed = { ...BOTO_DESCRIBE, params: { ...BOTO_DESCRIBE.params, LogicalResourceId: 'other' } };
  assert.equal((verifyEc2Signature(changed, SECRET) as { code: string }).code, 'SignatureDoesNotMatch');
  assert.equal((verifyEc2Signature(BOTO_DESCRIBE, 'wrong') as { code: string }).code, 'SignatureDoesNotMatch');
  assert.equal(verifyEc2Signature({ ...BOTO_DESCRIBE, host: '127.0.0.2:8000' }, SECRET).ok, false);
  const expired = verifyEc2Signature(BOTO_DESCRIBE, SECRET, { now: new Date('2024-01-01T00:16:00Z'), ttlSeconds: 900 });
  assert.equal(!expired.ok && expired.code, 'RequestExpired');
  assert.deepEqual(verifyEc2Signature(BOTO_DESCRIBE, SECRET, { now: new Date('2024-01-01T00:10:00Z'), ttlSeconds: 900 }), { ok: true });
});

test('SigV4: X-Amz-Date must be present, well-formed and on the scope date', () => {
  const { 'x-amz-date': _d, ...withoutDate } = BOTO_DESCRIBE.headers;
  assert.equal((verifyEc2Signature({ ...BOTO_DESCRIBE, headers: withoutDate }, SECRET) as { code: string }).code, 'IncompleteSignature');
  const garbled = { ...BOTO_DESCRIBE, headers: { ...BOTO_DESCRIBE.headers, 'x-amz-date': '2024-01-01T00:00:05Z' } };
  assert.equal((verifyEc2Signature(garbled, SECRET) as { code: string }).code, 'IncompleteSignature');
  const otherDay = { ...BOTO_DESCRIBE, headers: { ...BOTO_DESCRIBE.headers, 'x-amz-date': '20240102T000005Z' } };
  assert.equal((verifyEc2Signature(otherDay, SECRET) as { code: string }).code, 'IncompleteSignature');
});

test('SigV4: x-amz-content-sha256 must match the body', () => {
  const wrongHash = { ...BOTO_DESCRIBE, headers: { ...BOTO_DESCRIBE.headers, 'x-amz-content-sha256': '0'.repeat(64) } };
  assert.equal((verifyEc2Signature(wrongHash, SECRET) as { code: string }).code, 'SignatureDoesNotMatch');
});

/** Signs per the AWS SigV4 spec, written out step by step, independently of the verifier's code paths. */
function sigV4Query(url: URL, date: string, region: string, service: string, expires: number): URL {
  const scope = `${date.slice(0, 8)}/${region}/${service}/aws4_request`;
  url.searchParams.set('X-Amz-Algorithm', 'AWS4-HMAC-SHA256');
  url.searchParams.set('X-Amz-Credential', `${ACCESS}/${scope}`);
  url.searchParams.set('X-Amz-Date', date);
  url.searchParams.set('X-Amz-Expires', String(expires));
  url.searchParams.set('X-Amz-SignedHeaders', 'host');
  url.searchParams.sort();
  const query = url.search.slice(1).replaceAll('+', '%20');
  const canonical = ['GET', url.pathname, query, `host:${url.host}\n`, 'host', sha256('')].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonical)].join('\n');
  let key: Buffer = createHmac('sha256', `AWS4${SECRET}`).update(date.slice(0, 8)).digest();
  for (const part of [region, service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  url.searchParams.set('X-Amz-Signature', createHmac('sha256', key).update(toSign).digest('hex'));
  return url;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

test('SigV4 pre-signed query (X-Amz-*): verifies, honours X-Amz-Expires', () => {
  const url = sigV4Query(
    new URL('http://127.0.0.1:8000/v1/?Action=DescribeStackResource&StackName=mystack'),
    '20240101T000000Z',
    'heat',
    'cloudformation',
    300,
  );
  const request = requestFromUrl('GET', url.toString());
  assert.deepEqual(extractEc2Credential(request), { ok: true, accessKeyId: ACCESS, version: 4 });
  assert.deepEqual(verifyEc2Signature(request, SECRET, { now: new Date('2024-01-01T00:04:00Z') }), { ok: true });
  const late = verifyEc2Signature(request, SECRET, { now: new Date('2024-01-01T00:06:00Z') });
  assert.equal(!late.ok && late.code, 'RequestExpired');
});

test('SigV4: a SignedHeaders entry named like an object property is a missing header, not a crash', () => {
  for (const name of ['constructor', '__proto__', 'hasownproperty']) {
    const authorization = String(BOTO_DESCRIBE.headers.authorization).replace(
      'SignedHeaders=host;x-amz-date',
      `SignedHeaders=host;${name}`,
    );
    const result = verifyEc2Signature({ ...BOTO_DESCRIBE, headers: { ...BOTO_DESCRIBE.headers, authorization } }, SECRET);
    assert.deepEqual(result, { ok: false, code: 'SignatureDoesNotMatch', message: `the signed header '${name}' is not in the request` });
  }
});
