// Floats and big integers reach the cache and `--print` as the original writes them (it caches what json.loads
// read: `1.0` stays `1.0`, 12345678901234567890 keeps its digits), and reading them back is no change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pyJsonDumps } from '@hearth/agent-kit/python-json';
import { contextFor, fakeServer, optionsFor, tempDir } from '../test-support/fixtures.ts';
import { cfnCollector } from './cfn.ts';
import { createEc2Collector } from './ec2.ts';
import { heatLocalCollector } from './heat-local.ts';
import { createRequestCollector } from './request.ts';
import type { CollectOutcome } from './types.ts';

const BIN = new URL('../../bin/os-collect-config.js', import.meta.url).pathname;
const TEXT = '{"f": 1.0, "e": 1e16, "big": 12345678901234567890, "list": [0.5, 2.50, -0.0, 3], "nan": NaN, "deployments": []}';

/** What python3 writes for json.dumps(json.loads(text), indent=...). */
function python(text: string, indent = 'None'): string {
  const script = `import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin), indent=${indent}))`;
  return execFileSync('python3', ['-c', script], { input: text, encoding: 'utf8' });
}

/** Each output as json.dumps writes it. */
function dumped(outcome: CollectOutcome): Array<[string, string]> {
  if (outcome.kind !== 'data') assert.fail(JSON.stringify(outcome));
  return outcome.outputs.map(([key, content]) => [key, pyJsonDumps(content)]);
}

function run(args: string[], root: string) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root };
  return spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 30_000 });
}

test('os-collect-config --print and the cache keep 1.0 and big integers; the same floats again run nothing', () => {
  const root = tempDir();
  const local = join(root, 'local');
  mkdirSync(local, { mode: 0o700 });
  writeFileSync(join(local, 'm'), TEXT);
  const printed = run(['--print', '--local-path', local, '--cachedir', join(root, 'cache'), 'local'], root);
  assert.equal(printed.status, 0, printed.stderr);
  assert.equal(printed.stdout, `${python(`{"m": ${TEXT}}`, '1')}\n`);

  const ran = join(root, 'ran');
  const args = ['--one-time', '--command', `echo x >> ${ran}`, '--local-path', local, '--cachedir', join(root, 'cache'), 'local'];
  for (let pass = 0; pass < 2; pass++) {
    const result = run(args, root);
    assert.equal(result.status, 0, result.stderr);
  }
  assert.equal(readFileSync(join(root, 'cache', 'm.json'), 'utf8'), python(TEXT, '1'));
  assert.equal(readFileSync(join(root, 'cache', 'm.json.last'), 'utf8'), python(TEXT, '1'));
  // Python's `!=` finds nothing changed (1.0 == 1.0, and the NaN json.loads hands out equals itself in a dict).
  assert.equal(readFileSync(ran, 'utf8'), 'x\n');
});

test('a .last that holds 1 where the source now says 1.0 (or true) is no change, as Python finds 1 == 1.0 == True', () => {
  const root = tempDir();
  const local = join(root, 'local');
  const cache = join(root, 'cache');
  mkdirSync(local, { mode: 0o700 });
  mkdirSync(cache);
  writeFileSync(join(local, 'm'), '{"f": 1.0, "t": true, "big": 12345678901234567890}');
  // What an agent that read numbers with JSON.parse left behind, as Debian's os-collect-config also takes it.
  for (const name of ['m.json.orig', 'm.json.last']) writeFileSync(join(cache, name), '{"f": 1, "t": 1, "big": 12345678901234567890}');
  const ran = join(root, 'ran');
  const result = run(['--one-time', '--command', `echo x >> ${ran}`, '--local-path', local, '--cachedir', cache, 'local'], root);
  assert.equal(result.status, 0, result.stderr);
  assert.equal(existsSync(ran), false, 'nothing changed, so the command must not run');
});

test('request, cfn, heat_local and a cached ec2.json hand the collected floats and big integers on unchanged', async () => {
  const config = '{"x": 2.50, "n": 12345678901234567890}';
  const document = `{"a": 1.0, "deployments": [{"name": "d", "group": "os-apply-config", "config": ${config}}]}`;
  const server = await fakeServer((request, response) => {
    if (request.url.startsWith('/cfn')) {
      response.writeHead(200, { 'content-type': 'application/xml' });
      const detail = `<StackResourceDetail><Metadata>{"m": ${document}}</Metadata></StackResourceDetail>`;
      return void response.end(
        `<DescribeStackResourceResponse><DescribeStackResourceResult>${detail}</DescribeStackResourceResult></DescribeStackResourceResponse>`,
      );
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(document);
  });
  try {
    const exploded = [
      ['request', python(document)],
      ['d', python(config)],
    ];
    const request = contextFor(optionsFor(['--request-metadata-url', `${server.url}/md`]));
    assert.deepEqual(dumped(await createRequestCollector().collect(request)), exploded);

    const cfnArgs = ['--cfn-metadata-url', `${server.url}/cfn/`, '--cfn-access-key-id', 'AK', '--cfn-secret-access-key', 'S'];
    const cfn = contextFor(optionsFor([...cfnArgs, '--cfn-stack-name', 'web', '--cfn-path', 'vm1.Metadata.m']));
    assert.deepEqual(dumped(await cfnCollector.collect(cfn)), [['cfn', python(document)], exploded[1]]);
  } finally {
    await server.close();
  }

  const dir = tempDir();
  writeFileSync(join(dir, 'one'), '{"a": 1.0, "b": 1}');
  writeFileSync(join(dir, 'two'), '{"b": 2.0E-5}');
  const heatLocal = contextFor(optionsFor(['--heat_local-path', join(dir, 'one'), '--heat_local-path', join(dir, 'two')]));
  assert.deepEqual(dumped(await heatLocalCollector.collect(heatLocal)), [['heat_local', '{"a": 1.0, "b": 2e-05}']]);

  const options = optionsFor(['--ec2-metadata-url', 'http://127.0.0.1:9/refused']);
  mkdirSync(options.cachedir, { recursive: true });
  writeFileSync(join(options.cachedir, 'ec2.json'), '{"instance-id": "i-1", "weight": 1.0}');
  const ec2 = await createEc2Collector(() => undefined).collect(contextFor(options));
  assert.deepEqual(dumped(ec2), [['ec2', '{"instance-id": "i-1", "weight": 1.0}']]);
});
