import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_HOOK_TIMEOUT_SECONDS,
  DEFAULT_PRUNE_AFTER_SECONDS,
  hookTimeoutSeconds,
  parseHeatConfigArgs,
  USAGE,
  UsageError,
} from './options.ts';

test('defaults are 55-heat-config paths; HEARTH_ROOT prefixes every default, env overrides win', () => {
  const plain = parseHeatConfigArgs([], {});
  assert.equal(plain.configFile, '/var/run/heat-config/heat-config');
  assert.equal(plain.deployedDir, '/var/lib/heat-config/deployed');
  assert.equal(plain.oldDeployedDir, '/var/run/heat-config/deployed');
  assert.deepEqual(plain.hookDirs, ['/usr/libexec/heat-config/hooks', '/var/lib/heat-config/hooks']);
  assert.equal(plain.notifyCommand, 'heat-config-notify');
  assert.equal(plain.interrupted, 'rerun');
  assert.equal(plain.defaultTimeoutSeconds, DEFAULT_HOOK_TIMEOUT_SECONDS);
  assert.ok(Object.isFrozen(plain));

  const rooted = parseHeatConfigArgs([], {
    HEARTH_ROOT: '/t',
    HEAT_CONFIG_HOOKS: '/my/hooks',
    HEAT_CONFIG_NOTIFY: '/bin/notify',
    HEAT_CONFIG_DEPLOYED_OLD: '',
  });
  assert.deepEqual(rooted.hookDirs, ['/my/hooks', '/t/usr/libexec/heat-config/hooks', '/t/var/lib/heat-config/hooks']);
  assert.equal(rooted.deployedDir, '/t/var/lib/heat-config/deployed');
  assert.equal(rooted.oldDeployedDir, '/t/var/run/heat-config/deployed', 'an empty value counts as unset');
  assert.equal(rooted.notifyCommand, '/bin/notify');
  const env = parseHeatConfigArgs([], { HEAT_SHELL_CONFIG: '/c', HEAT_CONFIG_DEPLOYED: '/d', HEAT_CONFIG_DEPLOYED_OLD: '/o' });
  assert.deepEqual([env.configFile, env.deployedDir, env.oldDeployedDir], ['/c', '/d', '/o']);
});

test('--interrupted and --hook-timeout win over their env vars; bad values are usage errors naming them', () => {
  const env = { HEAT_CONFIG_INTERRUPTED: 'fail', HEAT_CONFIG_HOOK_TIMEOUT: '60' };
  assert.deepEqual([parseHeatConfigArgs([], env).interrupted, parseHeatConfigArgs([], env).defaultTimeoutSeconds], ['fail', 60]);
  const flags = parseHeatConfigArgs(['--interrupted', 'rerun', '--hook-timeout', '5', '--log-format', 'text', '--log-level', 'warn'], env);
  assert.deepEqual([flags.interrupted, flags.defaultTimeoutSeconds, flags.logFormat, flags.logLevel], ['rerun', 5, 'text', 'warn']);
  assert.throws(
    () => parseHeatConfigArgs(['--hook-timeout', '0']),
    new UsageError("argument --hook-timeout: expected a positive number of seconds, got '0'"),
  );
  assert.throws(() => parseHeatConfigArgs([], { HEAT_CONFIG_INTERRUPTED: 'skip' }), /HEAT_CONFIG_INTERRUPTED: invalid choice: 'skip'/);
  assert.throws(() => parseHeatConfigArgs(['--log-format', 'xml']), /--log-format: invalid choice: 'xml'/);
  assert.throws(() => parseHeatConfigArgs(['extra']), UsageError);
});

test('--prune-after wins over HEAT_CONFIG_PRUNE_AFTER; default 7 days, 0 allowed, negative or text refused; the outbox follows HEARTH_ROOT', () => {
  const plain = parseHeatConfigArgs([], { HEARTH_ROOT: '/t' });
  assert.deepEqual([plain.pruneAfterSeconds, plain.outboxDir], [DEFAULT_PRUNE_AFTER_SECONDS, '/t/var/lib/hearth/outbox']);
  assert.equal(DEFAULT_PRUNE_AFTER_SECONDS, 604_800);
  assert.equal(parseHeatConfigArgs([], { HEAT_CONFIG_PRUNE_AFTER: '0' }).pruneAfterSeconds, 0);
  assert.equal(parseHeatConfigArgs(['--prune-after', '60'], { HEAT_CONFIG_PRUNE_AFTER: '0' }).pruneAfterSeconds, 60);
  assert.equal(parseHeatConfigArgs([], { HEARTH_OUTBOX_DIR: '/o' }).outboxDir, '/o');
  assert.throws(
    () => parseHeatConfigArgs(['--prune-after=-1']),
    new UsageError("argument --prune-after: expected a number of seconds, 0 or more, got '-1'"),
  );
  assert.throws(
    () => parseHeatConfigArgs([], { HEAT_CONFIG_PRUNE_AFTER: 'weekly' }),
    /HEAT_CONFIG_PRUNE_AFTER: expected a number of seconds/,
  );
  assert.match(USAGE, /--prune-after SECONDS[\s\S]*HEAT_CONFIG_PRUNE_AFTER/);
});

test('the hook timeout comes from the deployment options, else the default', () => {
  assert.equal(hookTimeoutSeconds({ timeout: 90 }, 3600), 90);
  assert.equal(hookTimeoutSeconds({ timeout: '1.5' }, 3600), 1.5);
  assert.equal(hookTimeoutSeconds({}, 3600, [{ name: 'deploy_timeout', value: '120' }]), 120);
  assert.equal(hookTimeoutSeconds({ timeout: 5 }, 3600, [{ name: 'deploy_timeout', value: 120 }]), 5);
  assert.equal(hookTimeoutSeconds({}, 3600, [{ name: 'deploy_timeout', value: 'soon' }]), 3600);
  for (const options of [
    null,
    undefined,
    'x',
    {},
    { timeout: 0 },
    { timeout: -3 },
    { timeout: 'soon' },
    { timeout: '' },
    { timeout: true },
  ])
    assert.equal(hookTimeoutSeconds(options, 3600), 3600, JSON.stringify(options));
});
