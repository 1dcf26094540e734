// Side by side: Debian's cfn-init (heat-cfntools 1.4.2) and hearth's, each run in its own sandbox
// (private mount namespace, /etc /var /run overlaid, loopback only: clients.ts) on the same
// AWS::CloudFormation::Init metadata in cfn-init-data, no arguments (local mode). What each left
// under /etc and /var is compared whole; a last command lists the tree with modes and owners, so
// modes count too. Where the original is broken (nested configSets, JSON file content on Python 3)
// it fails and ours does what AWS documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isolation, runClient, type ClientResult } from './clients.ts';

const OURS = fileURLToPath(new URL('../../packages/cfn-tools/bin/cfn-init.js', import.meta.url));
const CONF = '/etc/hearth-conformance';
const OUT = '/var/tmp/hearth-conformance';

const installed = spawnSync('sh', ['-c', 'command -v cfn-init'], { stdio: 'ignore' }).status === 0;
const skip = !installed
  ? "Debian's cfn-init is missing: apt-get install -y heat-cfntools"
  : isolation() !== 'namespace' && 'needs a private mount namespace (root + unshare): cfn-init writes /var/log and /var/cache';
if (skip && !installed && process.env.CI === 'true') throw new Error(`${skip} (CI=true: a missing client is a failure)`);

type Init = Record<string, unknown>;

/** Runs one cfn-init (theirs: `cfn-init` on PATH; ours: node + the package's bin) with `init` as cfn-init-data. */
function runCfnInit(which: 'theirs' | 'ours', init: Init): Promise<ClientResult> {
  const argv = which === 'theirs' ? ['cfn-init'] : [process.execPath, OURS];
  return runClient(argv, {
    files: { '/var/lib/heat-cfntools/cfn-init-data': JSON.stringify({ 'AWS::CloudFormation::Init': init }) },
    timeoutMs: 60_000,
  });
}

/** What a run left under the test's own dirs (logs and caches differ by design and are left out). */
function results(run: ClientResult): Record<string, string> {
  return Object.fromEntries(Object.entries(run.written).filter(([path]) => path.startsWith(`${CONF}/`) || path.startsWith(`${OUT}/`)));
}

const manifest = {
  command: `find ${CONF} -printf '%P %y %m %u:%g %l\\n' | sort > ${OUT}/manifest`,
};

async function serveTarball(t: { after: (fn: () => void | Promise<void>) => void }): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-init-conformance-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'tree', 'static'), { recursive: true });
  writeFileSync(join(dir, 'tree', 'index.html'), '<h1>site</h1>\n');
  writeFileSync(join(dir, 'tree', 'static', 'app.js'), 'console.log(1);\n');
  execFileSync('tar', [
    '-c',
    '-z',
    '-f',
    join(dir, 'site.tar.gz'),
    '--owner=0',
    '--group=0',
    '-C',
    join(dir, 'tree'),
    'index.html',
    'static',
  ]);
  const tarball = readFileSync(join(dir, 'site.tar.gz'));
  const server: Server = createServer((request, response) => {
    if (request.url === '/site.tar.gz') response.end(tarball);
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/site.tar.gz`;
}

test('the same files, modes, owners, sources and commands (run in name order) as Debian’s cfn-init', { skip }, async (t) => {
  const tarball = await serveTarball(t);
  const init: Init = {
    config: {
      sources: { [`${CONF}/site`]: tarball },
      files: {
        [`${CONF}/app/app.conf`]: { content: 'listen = 8080\nname = "app"\n', mode: '000640', owner: 'nobody', group: 'nogroup' },
        [`${CONF}/app/nested/deep/readme`]: { content: 'no mode given\n' },
        [`${CONF}/app/script.sh`]: { content: '#!/bin/sh\necho from-script\n', mode: '000755' },
        [`${OUT}/.keep`]: { content: '' },
      },
      commands: {
        '10_first': { command: `echo "first, sees the file: $(test -f ${CONF}/app/app.conf && echo yes)" >> ${OUT}/order` },
        '02_list': { command: ['/bin/sh', '-c', `echo "list $0" >> ${OUT}/order`, 'argv0'] },
        '20_env': { command: `echo "env=$GREETING home=\${HOME:-unset}" >> ${OUT}/order`, env: { GREETING: 'hi' } },
        '30_cwd': { command: `{ pwd; ./script.sh; } >> ${OUT}/order`, cwd: `${CONF}/app` },
        '40_skipped': { command: `echo skipped >> ${OUT}/order`, test: 'false' },
        '45_tested': { command: `echo tested >> ${OUT}/order`, test: `test -d ${CONF}/site/static` },
        '50_ignored': { command: 'exit 4', ignoreErrors: 'true' },
        zz_manifest: manifest,
      },
    },
  };
  const [theirs, ours] = [await runCfnInit('theirs', init), await runCfnInit('ours', init)];
  assert.equal(theirs.exitCode, 0, theirs.stderr + (theirs.written['/var/log/cfn-init.log'] ?? ''));
  assert.equal(ours.exitCode, 0, ours.stderr);
  assert.equal(
    results(theirs)[`${OUT}/order`],
    `list argv0\nfirst, sees the file: yes\nenv=hi home=unset\n${CONF}/app\nfrom-script\ntested\n`,
    'the original did what this test expects of it',
  );
  assert.match(results(theirs)[`${OUT}/manifest`] ?? '', /^app\/app.conf f 640 nobody:nogroup $/m);
  assert.match(results(theirs)[`${OUT}/manifest`] ?? '', /^site\/static\/app.js f 644 root:root $/m);
  assert.deepEqual(results(ours), results(theirs));
  assert.ok(ours.written['/var/log/cfn-init.log']?.includes('"msg":"cfn-init done"'), 'ours logs to /var/log/cfn-init.log');
});

test('a failing command: both exit 1 and run nothing after it', { skip }, async () => {
  const init: Init = {
    config: {
      files: { [`${OUT}/.keep`]: { content: '' } },
      commands: {
        '10_ok': { command: `echo ok >> ${OUT}/order` },
        '20_fail': { command: 'exit 3' },
        '30_never': { command: `echo never >> ${OUT}/order` },
      },
    },
  };
  const [theirs, ours] = [await runCfnInit('theirs', init), await runCfnInit('ours', init)];
  assert.equal(theirs.exitCode, 1);
  assert.equal(ours.exitCode, 1);
  assert.equal(results(theirs)[`${OUT}/order`], 'ok\n');
  assert.deepEqual(results(ours), results(theirs));
  assert.match(ours.stderr, /commands: 20_fail: \/bin\/sh -c 'exit 3' failed \(exit code 3\)/);
});

test('nested configSets: the original crashes on Python 3; ours runs the sets in order', { skip }, async () => {
  const init: Init = {
    configSets: { base: ['prepare'], app: [{ ConfigSet: 'base' }, 'deploy'], default: [{ ConfigSet: 'app' }, 'finish'] },
    prepare: { files: { [`${OUT}/.keep`]: { content: '' } }, commands: { a: { command: `echo prepare >> ${OUT}/order` } } },
    deploy: { commands: { a: { command: `echo deploy >> ${OUT}/order` } } },
    finish: { commands: { a: { command: `echo finish >> ${OUT}/order` } } },
  };
  const [theirs, ours] = [await runCfnInit('theirs', init), await runCfnInit('ours', init)];
  assert.equal(theirs.exitCode, 1, 'the original still fails on nested configSets');
  assert.match(theirs.written['/var/log/cfn-init.log'] ?? '', /AttributeError: 'dict_keys' object has no attribute 'pop'/);
  assert.deepEqual(results(theirs), {});
  assert.equal(ours.exitCode, 0, ours.stderr);
  assert.equal(results(ours)[`${OUT}/order`], 'prepare\ndeploy\nfinish\n');
});

test('JSON file content: the original crashes on Python 3 and leaves an empty file; ours writes the JSON', { skip }, async () => {
  const content = { name: 'web', ports: [80, 443], tls: { enabled: true, ciphers: null } };
  const init: Init = {
    config: {
      files: { [`${CONF}/app.json`]: { content, mode: '000600' }, [`${OUT}/.keep`]: { content: '' } },
      commands: { zz_manifest: manifest },
    },
  };
  const [theirs, ours] = [await runCfnInit('theirs', init), await runCfnInit('ours', init)];
  assert.equal(theirs.exitCode, 1, 'the original still fails on JSON content');
  assert.match(theirs.written['/var/log/cfn-init.log'] ?? '', /TypeError: write\(\) argument must be str, not bytes/);
  assert.equal(results(theirs)[`${CONF}/app.json`], '');
  assert.equal(ours.exitCode, 0, ours.stderr);
  assert.deepEqual(JSON.parse(results(ours)[`${CONF}/app.json`] ?? ''), content);
  assert.match(results(ours)[`${OUT}/manifest`] ?? '', /^app.json f 600 root:root $/m);
});
