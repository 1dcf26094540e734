// cfn-hup as a real process against a signature-checking fake heat-api-cfn: the daemon fires post.update
// within one interval of a change, once; reloads hooks; --no-daemon runs one pass; service.restarted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFakeCfnApi, type FakeCfnApi } from '../shared/fake-cfn-api.ts';
import { binEnv, binPath, runBin } from '../shared/run-bin.ts';

const INIT = (n: number) => ({
  'AWS::CloudFormation::Init': { config: { files: { '/etc/app.conf': { content: `v${n}` } } } },
  unrelated: 0,
});

function setupRoot(api: FakeCfnApi, hooks: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'cfn-hup-e2e-'));
  mkdirSync(join(root, 'etc/cfn/hooks.d'), { recursive: true });
  writeFileSync(join(root, 'etc/cfn/cfn-credentials'), `AWSAccessKeyId=${api.accessKeyId}\nAWSSecretKey=${api.secretKey}\n`);
  writeFileSync(
    join(root, 'etc/cfn/cfn-hup.conf'),
    `[main]\nstack = web\ncredential-file = ${join(root, 'etc/cfn/cfn-credentials')}\nurl = ${api.url}\ninterval = 1\n`,
  );
  for (const [name, text] of Object.entries(hooks)) writeFileSync(join(root, 'etc/cfn', name), text.replaceAll('@ROOT@', root));
  return root;
}

function hook(name: string, triggers: string, path: string, log = `@ROOT@/fired.log`): string {
  return `[${name}]\ntriggers = ${triggers}\npath = ${path}\naction = echo "${name} $(id -u)" >> ${log}\n`;
}

function firedLines(root: string): string[] {
  const file = join(root, 'fired.log');
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
}

async function waitFor(predicate: () => boolean, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(25);
  }
  return Date.now() - started;
}

test('the daemon fires post.update within one interval of a metadata change, exactly once, and picks up a new hooks file', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', INIT(1));
  const root = setupRoot(api, {
    'hooks.d/init.conf': hook('init', 'post.update', 'Resources.Server.Metadata.AWS::CloudFormation::Init'),
    'hooks.d/unrelated.conf': hook('unrelated', 'post.update', 'Resources.Server.Metadata.unrelated'),
    'hooks.d/README.txt': hook('ignored', 'post.add,post.update', 'Resources.Server.Metadata'),
  });
  // cfn-init ran at boot and cached what it applied, so the first pass sees no change
  mkdirSync(join(root, 'var/cache/heat-cfntools'), { recursive: true });
  writeFileSync(join(root, 'var/cache/heat-cfntools/last_metadata_Server'), JSON.stringify(INIT(1)));
  const intervalMs = 2000;
  const child = spawn(process.execPath, [binPath('cfn-hup'), '--interval-seconds', String(intervalMs / 1000), '-v'], {
    env: binEnv({ HEARTH_ROOT: root }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  t.after(() => child.kill('SIGKILL'));

  const answered = () => api.requests.filter((request) => request.status === 200);
  const polls = () => answered().length;
  // A node process may take seconds to start on a loaded machine: the deadline is for that, not for cfn-hup.
  await waitFor(() => polls() >= 2, 30_000);
  assert.deepEqual(firedLines(root), [], 'the metadata is what cfn-init cached: no change');

  api.setMetadata('web', 'Server', INIT(2));
  const changedAt = polls(); // every GET answered from here on sees the change
  // Within one interval means in the pass of the first GET after the change, before the next GET
  // (passes do not overlap). Told by the order of events, not by a time bound a loaded machine stretches.
  await waitFor(() => firedLines(root).length > 0 || polls() >= changedAt + 2, 30_000);
  const firedAt = existsSync(join(root, 'fired.log')) ? statSync(join(root, 'fired.log')).mtimeMs : Infinity;
  const nextGetAt = answered()[changedAt + 1]?.at ?? Infinity;
  t.diagnostic(`fired ${Math.round(firedAt - (answered()[changedAt]?.at ?? NaN))} ms after the first GET since the change`);
  assert.ok(firedAt < nextGetAt, `fired at ${firedAt}, after the second GET since the change (${nextGetAt}): not within one interval`);
  const afterChange = polls();
  await waitFor(() => polls() >= afterChange + 2, 30_000); // two more passes, however slow: no second firing
  assert.deepEqual(firedLines(root), [`init ${process.getuid?.()}`], 'exactly once, and not the hook on another key');

  writeFileSync(join(root, 'etc/cfn/hooks.d/more.conf'), hook('more', 'post.update', 'Resources.Server.Metadata', join(root, 'fired.log')));
  writeFileSync(join(root, 'etc/cfn/hooks.d/zbad.conf'), hook('zbad', 'post.update', 'Server.Metadata', join(root, 'fired.log')));
  // The change must come after the reload, or the pass that sees it may still run the old hooks.
  await waitFor(() => /configuration reloaded/.test(stderr), 30_000);
  api.setMetadata('web', 'Server', { ...INIT(2), unrelated: 1 });
  await waitFor(() => firedLines(root).length >= 3, 30_000);
  await sleep(intervalMs + 200);
  assert.deepEqual(
    firedLines(root).slice(1).sort(),
    ['more 0', 'unrelated 0'].map((line) => line.replace('0', String(process.getuid?.()))),
  );
  assert.match(stderr, /configuration reloaded/);
  assert.match(stderr, /hook \[zbad\] in .*zbad.conf skipped: path 'Server.Metadata' is not Resources/, 'a reload logs what it skipped');

  child.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
  assert.ok(
    api.requests.every((request) => request.status === 200),
    'every request was correctly signed',
  );
});

test('--no-daemon runs one pass: with no cached metadata post.update fires, as the original; exit 1 when the server refuses the credentials', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', INIT(1));
  const root = setupRoot(api, {
    'hooks.conf':
      hook('updated', 'post.update', 'Resources.Server.Metadata.AWS::CloudFormation::Init') +
      hook('added', 'post.add', 'Resources.Server.Metadata.AWS::CloudFormation::Init') +
      hook('appears', 'post.add', 'Resources.Server.Metadata.nothing'),
  });
  const first = await runBin('cfn-hup', ['--no-daemon'], { env: { HEARTH_ROOT: root } });
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(firedLines(root), [`updated ${process.getuid?.()}`]);
  const again = await runBin('cfn-hup', ['-f'], { env: { HEARTH_ROOT: root } });
  assert.equal(again.code, 0);
  assert.equal(firedLines(root).length, 1, 'unchanged metadata fires nothing');
  api.setMetadata('web', 'Server', { ...INIT(1), nothing: 1 });
  const added = await runBin('cfn-hup', ['-f'], { env: { HEARTH_ROOT: root } });
  assert.equal(added.code, 0);
  assert.deepEqual(firedLines(root).slice(1), [`appears ${process.getuid?.()}`], 'a value missing from the cached copy is post.add');

  writeFileSync(join(root, 'etc/cfn/cfn-credentials'), `AWSAccessKeyId=${api.accessKeyId}\nAWSSecretKey=wrong\n`);
  const refused = await runBin('cfn-hup', ['-f'], { env: { HEARTH_ROOT: root } });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /403: SignatureDoesNotMatch/);
});

test('one bad hook is skipped and logged while the good ones run; a bad interval falls back to 15 minutes', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', INIT(1));
  const root = setupRoot(api, {
    'hooks.conf': hook('good', 'post.update', 'Resources.Server.Metadata'),
    'hooks.d/bad.conf': hook('bad', 'post.updated', 'Resources.Server.Metadata'),
  });
  writeFileSync(
    join(root, 'etc/cfn/cfn-hup.conf'),
    readFileSync(join(root, 'etc/cfn/cfn-hup.conf'), 'utf8').replace('interval = 1', 'interval = 0'),
  );
  const run = await runBin('cfn-hup', ['-f', '--log-format', 'text'], { env: { HEARTH_ROOT: root } });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(firedLines(root), [`good ${process.getuid?.()}`]);
  assert.match(run.stderr, /hook \[bad\] in .*bad.conf skipped: unknown trigger 'post.updated'/);
  assert.match(run.stderr, /\[main\] interval '0' is not a whole number of minutes ≥ 1; using 15/);

  writeFileSync(join(root, 'etc/cfn/hooks.conf'), hook('good', 'post.updat', 'Resources.Server.Metadata'));
  const none = await runBin('cfn-hup', ['-f'], { env: { HEARTH_ROOT: root } });
  assert.equal(none.code, 1, 'no usable hook at all is still an error');
  assert.match(none.stderr, /no usable hooks:\nhook \[good\].*unknown trigger 'post.updat';.*\nhook \[bad\]/);
});

test('service.restarted: a stopped ensureRunning service is started and the hook fires; a running one is left alone', async (t) => {
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', {
    'AWS::CloudFormation::Init': {
      config: { services: { systemd: { nginx: { ensureRunning: true }, cron: { ensureRunning: true }, off: { enabled: false } } } },
    },
  });
  const root = setupRoot(api, { 'hooks.conf': hook('restarted', 'service.restarted', 'Resources.Server.Metadata') });
  const bin = join(root, 'bin');
  mkdirSync(bin);
  // a fake systemctl: nginx is down, cron is up; starts are recorded
  writeFileSync(
    join(bin, 'systemctl'),
    `#!/bin/sh\necho "$*" >> ${root}/systemctl.log\ncase "$*" in\n  "is-active --quiet nginx.service") exit 3 ;;\n  *) exit 0 ;;\nesac\n`,
  );
  chmodSync(join(bin, 'systemctl'), 0o755);
  const run = await runBin('cfn-hup', ['-f'], { env: { HEARTH_ROOT: root, PATH: `${bin}:${process.env.PATH}` } });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(readFileSync(join(root, 'systemctl.log'), 'utf8').trim().split('\n'), [
    'is-active --quiet cron.service',
    'is-active --quiet nginx.service',
    'start --quiet nginx.service',
  ]);
  assert.deepEqual(firedLines(root), [`restarted ${process.getuid?.()}`]);
});

test('a pass cut short mid-action (cfn-hup and its action killed, or SIGTERM) fires the change again on the next pass, once', async (t) => {
  // The new metadata is cached before the hooks run: a pass that died then compared the next one with it, saw
  // no change, and the update was never applied.
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', INIT(2));
  const init = 'Resources.Server.Metadata.AWS::CloudFormation::Init';
  const root = setupRoot(api, {
    'hooks.d/a-slow.conf':
      `[slow]\ntriggers = post.update\npath = ${init}\n` +
      `action = [ -e @ROOT@/go ] || { touch @ROOT@/slow-started; sleep 30; }; echo slow >> @ROOT@/fired.log\n`,
    'hooks.d/b-next.conf': `[next]\ntriggers = post.update\npath = ${init}\naction = echo next >> @ROOT@/fired.log\n`,
  });
  mkdirSync(join(root, 'var/cache/heat-cfntools'), { recursive: true });
  writeFileSync(join(root, 'var/cache/heat-cfntools/last_metadata_Server'), JSON.stringify(INIT(1)));
  const started = join(root, 'slow-started');
  for (const stop of ['SIGKILL', 'SIGTERM'] as const) {
    // Its own process group: SIGKILL reaches cfn-hup and its action at once, as when the machine goes down.
    const child = spawn(process.execPath, [binPath('cfn-hup'), '--no-daemon'], {
      env: binEnv({ HEARTH_ROOT: root }),
      stdio: 'ignore',
      detached: true,
    });
    let done = false;
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve)).finally(() => (done = true));
    t.after(() => child.kill('SIGKILL'));
    await waitFor(() => existsSync(started) || done, 30_000);
    assert.ok(existsSync(started), `${stop}: the slow action runs (again)`);
    if (stop === 'SIGKILL') process.kill(-child.pid!, 'SIGKILL');
    else child.kill('SIGTERM');
    await exited;
    rmSync(started);
    assert.deepEqual(firedLines(root), [], `${stop}: no action finished`);
  }
  writeFileSync(join(root, 'go'), '');
  const again = await runBin('cfn-hup', ['--no-daemon'], { env: { HEARTH_ROOT: root } });
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(firedLines(root), ['slow', 'next'], 'the change interrupted twice fires every hook on the next pass');
  const after = await runBin('cfn-hup', ['--no-daemon'], { env: { HEARTH_ROOT: root } });
  assert.equal(after.code, 0, after.stderr);
  assert.deepEqual(firedLines(root), ['slow', 'next'], 'and only once');
});
