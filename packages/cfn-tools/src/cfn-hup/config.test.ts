import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_ACTION_TIMEOUT_SECONDS, loadHupConfig, type HupConfigFiles } from './config.ts';
import { changeEvent } from './events.ts';

function setup(files: Record<string, string>): HupConfigFiles {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-hup-config-'));
  mkdirSync(join(dir, 'hooks.d'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return { mainFile: join(dir, 'cfn-hup.conf'), hooksFile: join(dir, 'hooks.conf'), hooksDir: join(dir, 'hooks.d') };
}

const MAIN = '[main]\nstack = web\ncredential-file = /etc/cfn/cfn-credentials\ninterval = 5\n';

test('[main] and hooks from hooks.conf and hooks.d/*.conf (other files ignored), triggers split and exact', () => {
  const files = setup({
    'cfn-hup.conf': MAIN,
    'hooks.conf':
      '[reload]\ntriggers = post.add, post.update\npath = Resources.Server.Metadata.AWS::CloudFormation::Init\naction = /usr/bin/cfn-init -s web -r Server\nrunas = root\n',
    'hooks.d/b.conf': '[restart]\ntriggers=service.restarted\npath=Resources.Db.Metadata\naction=echo hi\n',
    'hooks.d/notes.txt': '[ignored]\ntriggers=post.update\npath=Resources.X.Metadata\naction=false\n',
  });
  const config = loadHupConfig(files);
  assert.deepEqual(config.main, {
    stack: 'web',
    credentialFile: '/etc/cfn/cfn-credentials',
    region: 'nova',
    intervalMinutes: 5,
    verbose: false,
    url: undefined,
    actionTimeoutSeconds: 3600,
  });
  assert.deepEqual(
    config.hooks.map((hook) => [hook.name, hook.triggers, hook.resource, hook.keys, hook.runas]),
    [
      ['reload', ['post.add', 'post.update'], 'Server', ['AWS::CloudFormation::Init'], 'root'],
      ['restart', ['service.restarted'], 'Db', [], undefined],
    ],
  );
  assert.ok(Object.isFrozen(config.hooks[0]));
});

test('bad configurations are refused with what is wrong', () => {
  const hook = '[h]\ntriggers = post.update\npath = Resources.S.Metadata\naction = true\n';
  assert.throws(() => loadHupConfig(setup({ 'hooks.conf': hook })), /cannot read the main configuration .*ENOENT/);
  assert.throws(
    () => loadHupConfig(setup({ 'cfn-hup.conf': `${MAIN}stack\n`, 'hooks.conf': hook })),
    /cannot read the main configuration .*cfn-hup.conf:5: expected "key = value"/,
  );
  assert.throws(
    () => loadHupConfig(setup({ 'cfn-hup.conf': '[main]\nstack = web\n', 'hooks.conf': hook })),
    /needs stack and credential-file/,
  );
  assert.throws(() => loadHupConfig(setup({ 'cfn-hup.conf': MAIN })), /no hooks: add a section/);
  assert.throws(
    () => loadHupConfig(setup({ 'cfn-hup.conf': MAIN, 'hooks.conf': hook.replace('post.update', 'post.updated') })),
    /no usable hooks:\nhook \[h\] in .*hooks.conf skipped: unknown trigger 'post.updated'/,
  );
});

test('a bad hook, an unparsable hooks file or a bad interval is skipped with a warning saying why; the good hooks stay', () => {
  const good = '[good]\ntriggers = post.update\npath = Resources.S.Metadata\naction = true\n';
  const files = setup({
    'cfn-hup.conf': MAIN.replace('interval = 5', 'interval = 0'),
    'hooks.conf':
      good +
      '[no-action]\ntriggers = post.update\npath = Resources.S.Metadata\n' +
      '[typo]\ntriggers = post.update, post.change\npath = Resources.S.Metadata\naction = true\n' +
      '[bad-path]\ntriggers = post.update\npath = S.Metadata\naction = true\n',
    'hooks.d/a.conf':
      '[good]\ntriggers = post.add\npath = Resources.T.Metadata\naction = false\n[other]\ntriggers = post.remove\npath = Resources.T.Metadata.k\naction = true\n',
    'hooks.d/b.conf': 'triggers post.update\n',
  });
  const config = loadHupConfig(files);
  assert.deepEqual(
    config.hooks.map((hook) => [hook.name, hook.file, hook.resource]),
    [
      ['good', files.hooksFile, 'S'],
      ['other', join(files.hooksDir, 'a.conf'), 'T'],
    ],
  );
  assert.equal(config.main.intervalMinutes, 15);
  assert.deepEqual(config.warnings, [
    `${join(files.hooksDir, 'b.conf')} skipped: ${join(files.hooksDir, 'b.conf')}:1: expected "key = value", got "triggers post.update"`,
    `${files.mainFile}: [main] interval '0' is not a whole number of minutes ≥ 1; using 15`,
    `hook [no-action] in ${files.hooksFile} skipped: it has no action; a hook needs triggers, path and action (runas optional)`,
    `hook [typo] in ${files.hooksFile} skipped: unknown trigger 'post.change'; use post.add, post.update, post.remove, service.restarted`,
    `hook [bad-path] in ${files.hooksFile} skipped: path 'S.Metadata' is not Resources.<resource>.Metadata[.<key>...]`,
    `hook [good] in ${join(files.hooksDir, 'a.conf')} skipped: it is already defined in ${files.hooksFile}`,
  ]);
  for (const [interval, minutes] of [
    ['-5', 15],
    ['abc', 15],
    ['2.5', 15],
    ['', 15],
    ['7', 7],
  ] as const) {
    const hooks = setup({ 'cfn-hup.conf': MAIN.replace('interval = 5', `interval = ${interval}`), 'hooks.conf': good });
    assert.equal(loadHupConfig(hooks).main.intervalMinutes, minutes, `interval = ${interval}`);
    assert.equal(loadHupConfig(hooks).warnings.length, minutes === 7 || interval === '' ? 0 : 1, `interval = ${interval}`);
  }
});

test('a bad action-timeout is replaced by the default with a warning naming the value; the hooks stay', () => {
  const hook = '[h]\ntriggers = post.update\npath = Resources.S.Metadata\naction = true\n';
  for (const bad of ['-1', '1.5', '10s', '10m', '1e3']) {
    const files = setup({ 'cfn-hup.conf': `${MAIN}action-timeout = ${bad}\n`, 'hooks.conf': hook });
    const config = loadHupConfig(files);
    assert.equal(config.main.actionTimeoutSeconds, DEFAULT_ACTION_TIMEOUT_SECONDS, bad);
    assert.deepEqual(config.warnings, [
      `${files.mainFile}: [main] action-timeout '${bad}' is not a whole number of seconds (0 for no limit); using ${DEFAULT_ACTION_TIMEOUT_SECONDS}`,
    ]);
    assert.deepEqual(
      config.hooks.map((h) => h.name),
      ['h'],
    );
  }
  for (const [text, seconds] of [
    ['0', 0],
    ['90', 90],
    ['', DEFAULT_ACTION_TIMEOUT_SECONDS],
  ] as const) {
    const config = loadHupConfig(setup({ 'cfn-hup.conf': `${MAIN}action-timeout = ${text}\n`, 'hooks.conf': hook }));
    assert.equal(config.main.actionTimeoutSeconds, seconds, `action-timeout = ${text}`);
    assert.deepEqual(config.warnings, [], `action-timeout = ${text}`);
  }
});

test('change events at a path: add, update, remove, none; a change elsewhere is no event', () => {
  const hook = { keys: ['AWS::CloudFormation::Init', 'config'] };
  const v1 = { 'AWS::CloudFormation::Init': { config: { files: { a: 1 } } }, other: 1 };
  assert.equal(changeEvent(undefined, v1, hook), 'post.update', 'no cache at all: post.update, as the original fires');
  assert.equal(changeEvent(undefined, { other: 1 }, hook), undefined, 'no cache and no value: nothing');
  assert.equal(changeEvent({}, v1, hook), 'post.add');
  assert.equal(changeEvent(v1, { ...v1, other: 2 }, hook), undefined);
  assert.equal(changeEvent(v1, { 'AWS::CloudFormation::Init': { config: { files: { a: 2 } } } }, hook), 'post.update');
  assert.equal(changeEvent(v1, { other: 1 }, hook), 'post.remove');
  assert.equal(changeEvent({}, {}, hook), undefined);
  assert.equal(changeEvent(v1, { ...v1, other: 2 }, { keys: [] }), 'post.update', 'the whole Metadata');
});

test('values keep their quotes, as Python ConfigParser reads them: a quoted word in an action stays shell text', () => {
  const files = setup({
    'cfn-hup.conf': MAIN,
    'hooks.conf': '[reload]\ntriggers = post.update\npath = Resources.Server.Metadata\naction = "/opt/run me.sh" --flag "y"\n',
  });
  assert.equal(loadHupConfig(files).hooks[0]!.action, '"/opt/run me.sh" --flag "y"');
});

test('read as one ConfigParser reads them: [DEFAULT] keys from any file fill every section, option names ignore case', () => {
  const files = setup({
    'cfn-hup.conf': '[DEFAULT]\nrunas = deploy\n[main]\nStack = web\ncredential-file = /etc/cfn/cfn-credentials\n',
    'hooks.conf': '[DEFAULT]\ntriggers = post.update\naction = /opt/reload.sh\n[own]\nPath = Resources.S.Metadata\nRunAs = root\n',
    'hooks.d/a.conf': '[shared]\npath = Resources.T.Metadata\n',
    'hooks.d/b.conf': '[DEFAULT]\naction = /opt/reload-later.sh\n',
  });
  const config = loadHupConfig(files);
  assert.equal(config.main.stack, 'web');
  assert.deepEqual(
    config.hooks.map((hook) => [hook.name, hook.triggers, hook.resource, hook.action, hook.runas]),
    [
      ['own', ['post.update'], 'S', '/opt/reload-later.sh', 'root'],
      ['shared', ['post.update'], 'T', '/opt/reload-later.sh', 'deploy'],
    ],
  );
});
