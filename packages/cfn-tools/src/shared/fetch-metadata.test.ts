import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentPaths } from '@hearth/agent-kit/paths';
import { startFakeCfnApi } from './fake-cfn-api.ts';
import { fetchMetadata } from './fetch-metadata.ts';

function tempRootPaths() {
  return agentPaths({ HEARTH_ROOT: mkdtempSync(join(tmpdir(), 'cfn-fetch-')) });
}

test('fetches from a signed DescribeStackResource, writes both cache files 0600 in a 0700 dir, and sees changes', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  const paths = tempRootPaths();
  const credentials = { accessKeyId: api.accessKeyId, secretKey: api.secretKey, origin: 'test' };
  api.setMetadata('web', 'Server', { 'AWS::CloudFormation::Init': { config: {} }, n: 1 });

  const first = await fetchMetadata({ stack: 'web', resource: 'Server', credentials, url: api.url, paths });
  assert.equal(first.source, 'server');
  assert.equal(first.changed, true);
  assert.deepEqual(first.metadata, { 'AWS::CloudFormation::Init': { config: {} }, n: 1 });
  const request = api.requests.at(-1)!;
  assert.equal(request.status, 200);
  assert.equal(request.params.ContentType, 'JSON');
  assert.equal(request.params.SignatureVersion, '2');
  assert.match(request.params.Timestamp ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

  const lastFile = join(paths.cfnCacheDir, 'last_metadata');
  assert.deepEqual(JSON.parse(readFileSync(`${lastFile}_Server`, 'utf8')), first.metadata);
  assert.deepEqual(JSON.parse(readFileSync(lastFile, 'utf8')), first.metadata);
  assert.equal(statSync(lastFile).mode & 0o777, 0o600);
  assert.equal(statSync(paths.cfnCacheDir).mode & 0o777, 0o700);

  const same = await fetchMetadata({ stack: 'web', resource: 'Server', credentials, url: api.url, paths });
  assert.equal(same.changed, false, 'same metadata, other key order or not, is no change');
  api.setMetadata('web', 'Server', JSON.stringify({ n: 2 }));
  const next = await fetchMetadata({ stack: 'web', resource: 'Server', credentials, url: api.url, paths });
  assert.deepEqual(next.metadata, { n: 2 }, 'Metadata given as a JSON string is parsed');
  assert.equal(next.changed, true);
});

test('the endpoint comes from the heat-cfntools files when there is no --url', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  const paths = tempRootPaths();
  mkdirSync(paths.heatCfntoolsDir, { recursive: true });
  writeFileSync(join(paths.heatCfntoolsDir, 'cfn-boto-cfg'), '[Boto]\nis_secure = 0\ncfn_region_endpoint = 127.0.0.1\n');
  writeFileSync(paths.cfnMetadataHintFile, `http://127.0.0.1:${api.port}/v1/\n`);
  api.setMetadata('s', 'R', { from: 'files' });
  const credentials = { accessKeyId: api.accessKeyId, secretKey: api.secretKey, origin: 'test' };
  const fetched = await fetchMetadata({ stack: 's', resource: 'R', credentials, paths });
  assert.deepEqual(fetched, { metadata: { from: 'files' }, source: 'server', origin: api.url, changed: true });
});

test('unreachable server: last_metadata_<res>, then last_metadata, then cfn-init-data; nothing readable is an error', async () => {
  const paths = tempRootPaths();
  const credentials = { accessKeyId: 'AK', secretKey: 'S', origin: 'test' };
  const options = { stack: 's', resource: 'R', credentials, url: 'http://127.0.0.1:9/v1/', paths, retries: 0 };
  await assert.rejects(fetchMetadata(options), /no metadata: .*ECONNREFUSED|no metadata: .*failed/);

  mkdirSync(paths.heatCfntoolsDir, { recursive: true });
  writeFileSync(paths.heatLocalDataPath, '{"boot": true}');
  const local = await fetchMetadata(options);
  assert.equal(local.source, 'local');
  assert.deepEqual(local.metadata, { boot: true });
  assert.match(local.fallbackReason ?? '', /127\.0\.0\.1:9/);

  writeFileSync(join(paths.cfnCacheDir, 'last_metadata'), '{"last": true}');
  writeFileSync(join(paths.cfnCacheDir, 'last_metadata_R'), 'not json');
  const last = await fetchMetadata(options);
  assert.deepEqual([last.source, last.origin, last.metadata], ['cache', join(paths.cfnCacheDir, 'last_metadata'), { last: true }]);

  writeFileSync(join(paths.cfnCacheDir, 'last_metadata_R'), '{"mine": true}');
  assert.deepEqual((await fetchMetadata(options)).metadata, { mine: true });
  assert.deepEqual((await fetchMetadata({ paths })).metadata, { mine: true }, 'no credentials: local files, last_metadata first');
});

test('a 5xx falls back; a 403 (wrong secret) or an unknown resource is an error, not a fallback', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  const paths = tempRootPaths();
  mkdirSync(paths.heatCfntoolsDir, { recursive: true });
  writeFileSync(paths.heatLocalDataPath, '{"boot": true}');
  api.setMetadata('s', 'R', { ok: 1 });
  const good = { accessKeyId: api.accessKeyId, secretKey: api.secretKey, origin: 'test' };
  const bad = { ...good, secretKey: 'wrong' };
  await assert.rejects(
    fetchMetadata({ stack: 's', resource: 'R', credentials: bad, url: api.url, paths }),
    /answered 403: SignatureDoesNotMatch/,
  );
  await assert.rejects(
    fetchMetadata({ stack: 's', resource: 'Nope', credentials: good, url: api.url, paths }),
    /answered 400: InvalidParameterValue/,
  );
  api.failWith(500);
  const fallback = await fetchMetadata({ stack: 's', resource: 'R', credentials: good, url: api.url, paths });
  assert.equal(fallback.source, 'local');
  assert.match(fallback.fallbackReason ?? '', /answered 500/);
});

test('local metadata that is not UTF-8 is skipped as invalid, never read with U+FFFD into the cache', async () => {
  const paths = tempRootPaths();
  mkdirSync(paths.heatCfntoolsDir, { recursive: true });
  writeFileSync(paths.heatLocalDataPath, Buffer.from('{"motd": "caf\xe9"}', 'latin1'));
  await assert.rejects(fetchMetadata({ paths }), /no metadata: .*cfn-init-data is not UTF-8/);
  assert.throws(() => readFileSync(join(paths.cfnCacheDir, 'last_metadata')), /ENOENT/, 'nothing cached');

  mkdirSync(paths.cfnCacheDir, { recursive: true });
  writeFileSync(join(paths.cfnCacheDir, 'last_metadata'), '{"motd": "caf\u00e9"}');
  const fetched = await fetchMetadata({ paths });
  assert.deepEqual([fetched.source, fetched.metadata], ['cache', { motd: 'café' }]);
});

test('floats and big integers keep their form in the cache, as json.loads and json.dumps keep them; 1 and 1.0 are no change', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  const paths = tempRootPaths();
  const credentials = { accessKeyId: api.accessKeyId, secretKey: api.secretKey, origin: 'test' };
  const lastFile = join(paths.cfnCacheDir, 'last_metadata');
  api.setMetadata('web', 'Server', '{"n": 1.0, "e": 1e16, "tiny": 0.00001, "big": 12345678901234567890, "z": -0.0, "i": 3}');
  const first = await fetchMetadata({ stack: 'web', resource: 'Server', credentials, url: api.url, paths });
  const written = '{"n": 1.0, "e": 1e+16, "tiny": 1e-05, "big": 12345678901234567890, "z": -0.0, "i": 3}';
  assert.equal(readFileSync(lastFile, 'utf8'), written);
  assert.equal(readFileSync(`${lastFile}_Server`, 'utf8'), written);
  assert.equal(first.changed, true);

  // A cache an older release wrote (1.0 as 1, the big integer rounded by JSON.parse) against the same metadata.
  writeFileSync(`${lastFile}_Server`, '{"n": 1, "e": 10000000000000000, "tiny": 1e-05, "big": 12345678901234567890, "z": 0, "i": 3.0}');
  const same = await fetchMetadata({ stack: 'web', resource: 'Server', credentials, url: api.url, paths });
  assert.equal(same.changed, false, "Python's == sees no change");
  assert.equal(readFileSync(`${lastFile}_Server`, 'utf8'), written, 'and the cache is rewritten in the float form');

  api.setMetadata('web', 'Server', '{"n": 1.5, "e": 1e16, "tiny": 0.00001, "big": 12345678901234567890, "z": -0.0, "i": 3}');
  assert.equal((await fetchMetadata({ stack: 'web', resource: 'Server', credentials, url: api.url, paths })).changed, true);
  api.setMetadata('web', 'Server', '{"n": 1.5, "e": 1e16, "tiny": 0.00001, "big": 12345678901234567891, "z": -0.0, "i": 3}');
  assert.equal(
    (await fetchMetadata({ stack: 'web', resource: 'Server', credentials, url: api.url, paths })).changed,
    true,
    'a big integer that differs in its last digit is a change',
  );
});
