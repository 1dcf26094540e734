import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { startFakeCfnApi } from '../shared/fake-cfn-api.ts';
import { pythonJsonDumps } from '../shared/python-json.ts';
import { valueAtKey } from './key-path.ts';
import { cfnGetMetadataMain } from './main.ts';

function sink() {
  let text = '';
  const stream = new Writable({ write: (chunk: Buffer, _enc, done) => ((text += chunk.toString()), done()) });
  return { stream, text: () => text };
}

const METADATA = { 'AWS::CloudFormation::Init': { config: { files: {} } }, a: { 'b.c': { d: [1, 'é'] }, n: null } };

test('-k walks a dotted path with quoted segments; a path that leads nowhere is undefined', () => {
  assert.deepEqual(valueAtKey(METADATA, "a.'b.c'.d"), [1, 'é']);
  assert.equal(valueAtKey(METADATA, 'a.n'), null);
  assert.equal(valueAtKey(METADATA, 'a.b.c'), undefined);
  assert.equal(valueAtKey(METADATA, 'a.missing'), undefined);
  assert.equal(valueAtKey(METADATA, "a.'b.c'.d.0"), undefined, 'lists are not indexed, as in the original');
});

test('json.dumps output: Python separators and ASCII escapes', () => {
  assert.equal(pythonJsonDumps(METADATA.a), '{"b.c": {"d": [1, "\\u00e9"]}, "n": null}');
  assert.equal(pythonJsonDumps([true, 1.5, 'x']), '[true, 1.5, "x"]');
});

test('prints the metadata from a signed request (credential file), the value at -k, and refreshes the cache', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', METADATA);
  const root = mkdtempSync(join(tmpdir(), 'cfn-get-metadata-'));
  const credentialFile = join(root, 'creds');
  writeFileSync(credentialFile, `AWSAccessKeyId=${api.accessKeyId}\nAWSSecretKey=${api.secretKey}\n`);
  const env = { HEARTH_ROOT: root };

  const out = sink();
  const code = await cfnGetMetadataMain(['-s', 'web', '-r', 'Server', '--credential-file', credentialFile, '-u', api.url], {
    env,
    stdout: out.stream,
  });
  assert.equal(code, 0);
  assert.equal(out.text(), `${pythonJsonDumps(METADATA)}\n`);
  assert.deepEqual(JSON.parse(readFileSync(join(root, 'var/cache/heat-cfntools/last_metadata_Server'), 'utf8')), METADATA);

  const keyed = sink();
  await cfnGetMetadataMain(
    ['-s', 'web', '-r', 'Server', '--access-key', api.accessKeyId, '--secret-key', api.secretKey, '-u', api.url, '-k', "a.'b.c'"],
    {
      env,
      stdout: keyed.stream,
    },
  );
  assert.equal(keyed.text(), '{"d": [1, "\\u00e9"]}\n');
  const nothing = sink();
  await cfnGetMetadataMain(['-s', 'web', '-r', 'Server', '-u', api.url, '-k', 'a.n'], {
    env,
    stdout: nothing.stream,
    stderr: sink().stream,
  });
  assert.equal(nothing.text(), '', 'a null value prints nothing, as the original');
});

test('a wrong secret exits 1 with the server’s reason; without credentials it reads the cache; with nothing at all it fails', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', { v: 1 });
  const root = mkdtempSync(join(tmpdir(), 'cfn-get-metadata-'));
  const env = { HEARTH_ROOT: root };
  await assert.rejects(
    cfnGetMetadataMain(['-s', 'web', '-r', 'Server', '--access-key', api.accessKeyId, '--secret-key', 'wrong', '-u', api.url], {
      env,
      stdout: sink().stream,
    }),
    (error: { exitCode: number; message: string }) => error.exitCode === 1 && /403: SignatureDoesNotMatch/.test(error.message),
  );
  await assert.rejects(
    cfnGetMetadataMain(['-s', 'web', '-r', 'Server'], { env, stdout: sink().stream, stderr: sink().stream }),
    /no metadata: no credentials/,
  );
  mkdirSync(join(root, 'var/cache/heat-cfntools'), { recursive: true });
  writeFileSync(join(root, 'var/cache/heat-cfntools/last_metadata_Server'), '{"cached": true}');
  const out = sink();
  await cfnGetMetadataMain(['-s', 'web', '-r', 'Server'], { env, stdout: out.stream, stderr: sink().stream });
  assert.equal(out.text(), '{"cached": true}\n');
  await assert.rejects(
    cfnGetMetadataMain(['-r', 'Server'], { env }),
    (error: { exitCode: number; message: string }) => error.exitCode === 2 && /-s\/--stack/.test(error.message),
  );
  await assert.rejects(cfnGetMetadataMain(['-s', '', '-r', 'Server'], { env }), /The Stack name must not be empty/);
});

test('floats and big integers print as json.dumps prints them (1.0, 1e+16, every digit), the whole metadata and at -k', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', '{"a": {"n": 1.0, "e": 1e16, "big": 12345678901234567890}}');
  const root = mkdtempSync(join(tmpdir(), 'cfn-get-metadata-'));
  const credentialFile = join(root, 'creds');
  writeFileSync(credentialFile, `AWSAccessKeyId=${api.accessKeyId}\nAWSSecretKey=${api.secretKey}\n`);
  const run = async (...extra: string[]) => {
    const out = sink();
    const code = await cfnGetMetadataMain(['-s', 'web', '-r', 'Server', '--credential-file', credentialFile, '-u', api.url, ...extra], {
      env: { HEARTH_ROOT: root },
      stdout: out.stream,
    });
    assert.equal(code, 0);
    return out.text();
  };
  assert.equal(await run(), '{"a": {"n": 1.0, "e": 1e+16, "big": 12345678901234567890}}\n');
  assert.equal(await run('-k', 'a.n'), '1.0\n');
  assert.equal(await run('-k', 'a.big'), '12345678901234567890\n');
});
