import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit';
import { parseCommandLine, type CollectOptions } from './options.ts';

function tempRoot(): string {
  return mkdtempSync(join(tmpdir(), 'occ-options-'));
}

function run(argv: string[], env: NodeJS.ProcessEnv): CollectOptions {
  const parsed = parseCommandLine(argv, env);
  assert.equal(parsed.action, 'run');
  return (parsed as { options: CollectOptions }).options;
}

test('defaults are the original ones, with every path under HEARTH_ROOT', () => {
  const root = tempRoot();
  const options = run([], { HEARTH_ROOT: root });
  assert.equal(options.command, undefined);
  assert.equal(options.cachedir, `${root}/var/lib/os-collect-config`);
  assert.equal(options.backupCachedir, `${root}/var/run/os-collect-config`);
  assert.deepEqual(options.collectors, ['heat_local', 'ec2', 'cfn', 'heat', 'request', 'local', 'zaqar']);
  assert.equal(options.collectorsDefaulted, true);
  assert.equal(options.minPollingInterval, 1);
  assert.equal(options.pollingInterval, 30);
  assert.equal(options.splay, 0);
  assert.deepEqual(options.deploymentKeys, ['deployments']);
  assert.deepEqual(options.groups.heat_local?.path, [`${root}/var/lib/heat-cfntools/cfn-init-data`]);
  assert.deepEqual(options.groups.local?.path, [`${root}/var/lib/os-collect-config/local-data`]);
  assert.equal(options.groups.ec2?.metadata_url, 'http://169.254.169.254/latest/meta-data');
  assert.equal(options.groups.hearth?.wait, 55);
  assert.deepEqual(options.configFiles, []);
  assert.ok(Object.isFrozen(options) && Object.isFrozen(options.groups.cfn));
});

test('the default config file is read; the command line wins over it; repeated keys accumulate', () => {
  const root = tempRoot();
  const conf = join(root, 'etc', 'os-collect-config.conf');
  mkdirSync(join(root, 'etc'));
  writeFileSync(
    conf,
    [
      '[DEFAULT]',
      'command = os-refresh-config',
      'polling_interval = 10',
      'collectors = heat_local',
      'collectors = cfn',
      'one_time = yes',
      '[cfn]',
      'metadata_url = http://127.0.0.1:8000/v1/',
      'path = vm1.Metadata',
      'path = vm1.Other',
      'secret_access_key = a$$b',
      'access_key_id = $stack_name-key',
      'stack_name = web',
      '[heat_local]',
      'path = /x',
    ].join('\n'),
  );
  const options = run(['-i', '5', '--cfn-stack-name', 'other', '--heat_local-path', '/y', '--heat-local-path', '/z'], {
    HEARTH_ROOT: root,
  });
  assert.deepEqual(options.configFiles, [conf]);
  assert.equal(options.command, 'os-refresh-config');
  assert.equal(options.pollingInterval, 5);
  assert.equal(options.oneTime, true);
  assert.deepEqual(options.collectors, ['heat_local', 'cfn']);
  assert.equal(options.collectorsDefaulted, false);
  assert.deepEqual(options.groups.cfn?.path, ['vm1.Metadata', 'vm1.Other']);
  assert.equal(options.groups.cfn?.stack_name, 'other');
  assert.equal(options.groups.cfn?.secret_access_key, 'a$b', '$$ is a literal dollar');
  assert.equal(options.groups.cfn?.access_key_id, 'other-key', '$name refers to the same group, as resolved (command line first)');
  assert.deepEqual(options.groups.heat_local?.path, ['/y', '/z']);
});

test('the config dir (default <config file>.d) is read after the config file and left out of the hashed list', () => {
  const root = tempRoot();
  mkdirSync(join(root, 'etc', 'os-collect-config.conf.d'), { recursive: true });
  writeFileSync(join(root, 'etc', 'os-collect-config.conf'), '[hearth]\nmetadata_url = http://127.0.0.1:1/m\naccess_key_id = old\n');
  writeFileSync(
    join(root, 'etc', 'os-collect-config.conf.d', '50-credentials.conf'),
    '[hearth]\naccess_key_id = AK\nsecret_access_key = S\n',
  );
  writeFileSync(join(root, 'etc', 'os-collect-config.conf.d', 'ignored.txt'), '[hearth]\naccess_key_id = no\n');
  const options = run([], { HEARTH_ROOT: root });
  assert.deepEqual(options.configFiles, [join(root, 'etc', 'os-collect-config.conf')]);
  assert.deepEqual(
    [options.groups.hearth?.metadata_url, options.groups.hearth?.access_key_id, options.groups.hearth?.secret_access_key],
    ['http://127.0.0.1:1/m', 'AK', 'S'],
  );
});

test('command-line values are interpolated too, as oslo does: $$ is a literal dollar', () => {
  const options = run(['-c', 'echo $$OS_CONFIG_FILES $cachedir ${unknown}', '--cachedir', '/c'], { HEARTH_ROOT: tempRoot() });
  assert.equal(options.command, 'echo $OS_CONFIG_FILES /c ${unknown}');
});

test('positional collectors override the file; --force implies --one-time; --noone-time turns it off', () => {
  const root = tempRoot();
  const conf = join(root, 'a.conf');
  writeFileSync(conf, '[DEFAULT]\ncollectors = cfn\none_time = true\n');
  const options = run(['--config-file', conf, 'local', 'request', '--force'], { HEARTH_ROOT: root });
  assert.deepEqual(options.collectors, ['local', 'request']);
  assert.equal(options.force, true);
  assert.equal(options.oneTime, true);
  assert.equal(run(['--config-file', conf, '--noone-time'], { HEARTH_ROOT: root }).oneTime, false);
});

test('bad input is refused with the offending value', () => {
  const root = tempRoot();
  const env = { HEARTH_ROOT: root };
  const expectExit = (argv: string[], code: number, pattern: RegExp): void => {
    assert.throws(
      () => parseCommandLine(argv, env),
      (error: unknown) => error instanceof ExitError && error.exitCode === code && pattern.test(error.message),
    );
  };
  expectExit(['nonsense'], 1, /unknown collectors \["nonsense"\]/);
  expectExit(['--no-such-flag'], 2, /no-such-flag/);
  expectExit(['--polling-interval', 'soon'], 1, /--polling-interval must be a number, got 'soon'/);
  expectExit(['--config-file', join(root, 'missing.conf')], 1, /config file not found/);
  expectExit(['--config-file', root], 1, new RegExp(`config file is a directory: ${root} \\(for a directory use --config-dir\\)`));
  assert.equal(run(['--config-file', '/dev/null'], env).configFiles[0], '/dev/null', 'an empty config, as with oslo');
  const conf = join(root, 'b.conf');
  writeFileSync(conf, '[DEFAULT]\nforce = maybe\n');
  expectExit(['--config-file', conf], 1, /must be true or false, got 'maybe'/);
});

test('--help and --version are actions of their own', () => {
  assert.deepEqual(parseCommandLine(['--help'], {}), { action: 'help' });
  assert.deepEqual(parseCommandLine(['--version'], {}), { action: 'version' });
});

test("the original's own flag spellings: --cfn-ca_certificate, --keystone-cache_*, oslo's --zaqar-no<flag> and oslo.log's flags", () => {
  const root = tempRoot();
  const options = run(
    [
      '--cfn-ca_certificate',
      '/etc/ca.pem',
      '--keystone-cache_dir',
      '/k',
      '--keystone-cache_ttl',
      '60',
      '--zaqar-use-websockets',
      '--zaqar-nouse-websockets',
      '--use-syslog',
      '--nouse-journal',
      '--use-json',
      '--watch-log-file',
      '--log-config-append',
      '/dev/null',
      '--log-date-format',
      '%Y',
      '--syslog-log-facility',
      'LOG_USER',
      '--debug',
      '--nodebug',
      '--logdir',
      '/var/log/occ',
    ],
    { HEARTH_ROOT: root },
  );
  assert.equal(options.groups.cfn?.ca_certificate, '/etc/ca.pem');
  assert.equal(options.groups.keystone?.cache_dir, '/k');
  assert.equal(options.groups.keystone?.cache_ttl, 60);
  assert.equal(options.groups.zaqar?.use_websockets, false);
  assert.equal(options.logLevel, 'info', '--nodebug');
  assert.equal(options.logFile, '/var/log/occ/os-collect-config.log', 'a log dir without a log file, as oslo.log names it');
  assert.equal(run(['--logfile', 'x.log', '--log-dir', '/l'], { HEARTH_ROOT: root }).logFile, '/l/x.log');
  assert.equal(run(['--log-file', '/abs.log', '--log-dir', '/l'], { HEARTH_ROOT: root }).logFile, '/abs.log');
});

test("oslo.log's debug, log_file and log_dir are read from the config file's [DEFAULT]; the command line wins", () => {
  const root = tempRoot();
  const conf = join(root, 'a.conf');
  writeFileSync(conf, '[DEFAULT]\ndebug = True\nlog_file = occ.log\nlog_dir = /var/log/hearth\n');
  const options = run(['--config-file', conf], { HEARTH_ROOT: root });
  assert.equal(options.logLevel, 'debug');
  assert.equal(options.logFile, '/var/log/hearth/occ.log');
  assert.equal(run(['--config-file', conf, '--nodebug', '--log-file', '/x.log'], { HEARTH_ROOT: root }).logLevel, 'info');
  writeFileSync(conf, '[DEFAULT]\ndebug = sometimes\n');
  assert.throws(
    () => parseCommandLine(['--config-file', conf], { HEARTH_ROOT: root }),
    (error: unknown) =>
      error instanceof ExitError && error.exitCode === 1 && /debug must be true or false, got 'sometimes'/.test(error.message),
  );
});
