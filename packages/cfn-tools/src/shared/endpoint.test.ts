import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMetadataServerHint, resolveCfnEndpoint } from './endpoint.ts';

function tempPaths(files: { boto?: string; hint?: string }) {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-endpoint-'));
  const paths = { heatCfntoolsDir: dir, cfnMetadataHintFile: join(dir, 'cfn-metadata-server') };
  if (files.boto !== undefined) writeFileSync(join(dir, 'cfn-boto-cfg'), files.boto);
  if (files.hint !== undefined) writeFileSync(paths.cfnMetadataHintFile, files.hint);
  return paths;
}

test('the hint keeps the port of a URL ending in /v1/ (the original fell back to 8000)', () => {
  assert.deepEqual(parseMetadataServerHint('http://heat.example.com:8123/v1/\n'), {
    text: 'http://heat.example.com:8123/v1',
    protocol: 'http:',
    host: 'heat.example.com',
    port: 8123,
  });
  assert.equal(parseMetadataServerHint('garbage:9000').port, 9000);
  assert.equal(parseMetadataServerHint('http://h/v1/').port, undefined);
});

test('host from cfn-boto-cfg, port from cfn-metadata-server, path /v1/; HTTPS and no verification when the boto config says so', () => {
  const boto =
    '[Boto]\ndebug = 0\nis_secure = 0\nhttps_validate_certificates = 1\ncfn_region_name = heat\ncfn_region_endpoint = 10.0.0.5\n';
  const paths = tempPaths({ boto, hint: 'http://10.0.0.5:8001/v1/' });
  const endpoint = resolveCfnEndpoint(paths);
  assert.equal(endpoint?.url, 'http://10.0.0.5:8001/v1/');
  assert.equal(endpoint?.insecure, false);
  assert.equal(endpoint?.origin, `${join(paths.heatCfntoolsDir, 'cfn-boto-cfg')} + ${paths.cfnMetadataHintFile}`);
  const secure = resolveCfnEndpoint(
    tempPaths({ boto: boto.replace('is_secure = 0', 'is_secure = 1').replace('certificates = 1', 'certificates = 0') }),
  );
  assert.equal(secure?.url, 'https://10.0.0.5:8000/v1/');
  assert.equal(secure?.insecure, true);
  assert.equal(resolveCfnEndpoint(tempPaths({ hint: 'https://cfn.example.com/v1/' }))?.url, 'https://cfn.example.com:8000/v1/');
  assert.equal(
    resolveCfnEndpoint(tempPaths({ boto, hint: 'http://x:8001/v1/' }), { port: 8003, forcePort: true })?.url,
    'http://10.0.0.5:8003/v1/',
  );
  const cloudwatch = { port: 8003, forcePort: true, service: 'cloudwatch' } as const;
  const withWatch = `${boto}cloudwatch_region_name = heat\ncloudwatch_region_endpoint = 10.0.0.9\n`;
  assert.equal(resolveCfnEndpoint(tempPaths({ boto: withWatch }), cloudwatch)?.url, 'http://10.0.0.9:8003/v1/');
  assert.equal(resolveCfnEndpoint(tempPaths({ boto: withWatch }))?.url, 'http://10.0.0.5:8000/v1/', 'the CFN API keeps its own host');
  assert.equal(resolveCfnEndpoint(tempPaths({ boto }), cloudwatch)?.url, 'http://10.0.0.5:8003/v1/', 'no cloudwatch host: the CFN host');
});

test('--url wins and gets /v1/ when it has no path; no files and no --url give undefined; a bad --url is a usage error', () => {
  const paths = tempPaths({ boto: '[Boto]\ncfn_region_endpoint = 10.0.0.5\n' });
  assert.equal(resolveCfnEndpoint(paths, { url: 'https://127.0.0.1:9443' })?.url, 'https://127.0.0.1:9443/v1/');
  assert.equal(resolveCfnEndpoint(paths, { url: 'http://127.0.0.1:1/custom/' })?.url, 'http://127.0.0.1:1/custom/');
  assert.equal(resolveCfnEndpoint(tempPaths({})), undefined);
  assert.throws(() => resolveCfnEndpoint(paths, { url: 'ftp://x/' }), /must be http/);
  assert.throws(() => resolveCfnEndpoint(paths, { url: 'not a url' }), /not an absolute URL/);
});
