// cfn-hup as a real process over a metadata cache a crash damaged: a cut cache file or pending record is named in
// the log (the hooks then fire as on a first pass, as the original's do), and a temp file a writer killed mid-write
// left (it holds the metadata) is removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeCfnApi } from '../shared/fake-cfn-api.ts';
import { runBin } from '../shared/run-bin.ts';

const INIT = { 'AWS::CloudFormation::Init': { config: { files: { '/etc/app.conf': { content: 'v1' } } } } };

test('a cut metadata cache and pending record are named in the log; post.update fires once; a dead writer’s temp file goes', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', INIT);
  const root = mkdtempSync(join(tmpdir(), 'cfn-hup-damage-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'etc/cfn'), { recursive: true });
  writeFileSync(join(root, 'etc/cfn/cfn-credentials'), `AWSAccessKeyId=${api.accessKeyId}\nAWSSecretKey=${api.secretKey}\n`);
  writeFileSync(
    join(root, 'etc/cfn/cfn-hup.conf'),
    `[main]\nstack = web\ncredential-file = ${join(root, 'etc/cfn/cfn-credentials')}\nurl = ${api.url}\ninterval = 1\n`,
  );
  writeFileSync(
    join(root, 'etc/cfn/hooks.conf'),
    `[init]\ntriggers = post.update\npath = Resources.Server.Metadata.AWS::CloudFormation::Init\naction = echo init >> ${root}/fired.log\n`,
  );
  const cache = join(root, 'var/cache/heat-cfntools');
  mkdirSync(cache, { recursive: true });
  // Power lost mid-write on a disk that lost its cache: both files hold part of their JSON.
  writeFileSync(join(cache, 'last_metadata_Server'), JSON.stringify(INIT).slice(0, 20));
  writeFileSync(join(cache, 'cfn_hup_pending_Server'), '{"before": {"AWS::Cl');
  const deadPid = spawnSync('true').pid;
  const leftover = `.last_metadata_Server.${deadPid}.0123456789ab.tmp`;
  writeFileSync(join(cache, leftover), JSON.stringify(INIT));

  const first = await runBin('cfn-hup', ['--no-daemon', '-v'], { env: { HEARTH_ROOT: root } });
  assert.equal(first.code, 0, first.stderr);
  const fired = () => (existsSync(join(root, 'fired.log')) ? readFileSync(join(root, 'fired.log'), 'utf8') : '');
  assert.equal(fired(), 'init\n', 'compared with nothing, as the original does on a first pass');
  const lines = first.stderr.split('\n');
  const naming = (file: string, message: RegExp) => lines.filter((line) => line.includes(file) && message.test(line));
  assert.equal(naming(join(cache, 'last_metadata_Server'), /cached metadata cannot be read/).length, 1, first.stderr);
  assert.equal(naming(join(cache, 'cfn_hup_pending_Server'), /record of a change being applied cannot be read/).length, 1, first.stderr);
  assert.equal(naming(leftover, /removed temp files left by a writer killed mid-write/).length, 1, first.stderr);
  assert.equal(existsSync(join(cache, leftover)), false);
  assert.equal(existsSync(join(cache, 'cfn_hup_pending_Server')), false, 'the pass completed: no change is pending');

  const again = await runBin('cfn-hup', ['--no-daemon', '-v'], { env: { HEARTH_ROOT: root } });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(fired(), 'init\n', 'the cache was written whole again: nothing fires twice');
  assert.doesNotMatch(again.stderr, /cannot be read|killed mid-write/);
});
