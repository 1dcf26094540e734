import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_PATH_DEFAULTS, AGENT_PATH_ENV, agentPaths } from './paths.ts';

test('with an empty environment every path is the original tools default', () => {
  const paths = agentPaths({});
  assert.equal(paths.collectConfigFile, '/etc/os-collect-config.conf');
  assert.equal(paths.collectCacheDir, '/var/lib/os-collect-config');
  assert.equal(paths.refreshLockFile, '/var/run/os-refresh-config.lock');
  assert.equal(paths.heatConfigFile, '/var/run/heat-config/heat-config');
  assert.equal(paths.outboxDir, '/var/lib/hearth/outbox');
  assert.deepEqual({ ...paths }, { ...AGENT_PATH_DEFAULTS });
});

test('the env vars the original tools honour override their paths', () => {
  const paths = agentPaths({
    OS_REFRESH_CONFIG_BASE_DIR: '/opt/orc',
    OS_CONFIG_APPLIER_TEMPLATES: '/opt/templates',
    HEAT_CONFIG_HOOKS: '/opt/hooks',
    HEAT_CONFIG_DEPLOYED: '/opt/deployed',
    HEAT_SHELL_CONFIG: '/opt/heat-config',
  });
  assert.equal(paths.refreshBaseDir, '/opt/orc');
  assert.equal(paths.applyTemplatesDir, '/opt/templates');
  assert.equal(paths.heatConfigHooksDir, '/opt/hooks');
  assert.equal(paths.heatConfigDeployedDir, '/opt/deployed');
  assert.equal(paths.heatConfigFile, '/opt/heat-config');
  assert.equal(paths.heatConfigDir, '/var/lib/heat-config', 'other fields keep their defaults');
});

test('fields without an original env var use HEARTH_<FIELD_IN_UPPER_SNAKE>', () => {
  assert.equal(AGENT_PATH_ENV.collectBackupCacheDir, 'HEARTH_COLLECT_BACKUP_CACHE_DIR');
  assert.equal(AGENT_PATH_ENV.heatCfntoolsDir, 'HEARTH_HEAT_CFNTOOLS_DIR');
  const paths = agentPaths({ HEARTH_COLLECT_CACHE_DIR: '/c', HEARTH_CFN_METADATA_HINT_FILE: '/hint', HEARTH_OUTBOX_DIR: '/outbox' });
  assert.equal(paths.collectCacheDir, '/c');
  assert.equal(paths.cfnMetadataHintFile, '/hint');
  assert.equal(paths.outboxDir, '/outbox');
  assert.equal(paths.stateDir, '/var/lib/hearth', 'the outbox override does not move the state dir');
});

test('a field with an original env var ignores the HEARTH_ spelling', () => {
  assert.equal(agentPaths({ HEARTH_REFRESH_BASE_DIR: '/nope' }).refreshBaseDir, '/usr/libexec/os-refresh-config');
});

test('every field has its own env var', () => {
  const names = Object.values(AGENT_PATH_ENV);
  assert.equal(new Set(names).size, names.length);
  assert.deepEqual(Object.keys(AGENT_PATH_ENV).sort(), Object.keys(AGENT_PATH_DEFAULTS).sort());
  for (const [field, name] of Object.entries(AGENT_PATH_ENV)) {
    assert.equal((agentPaths({ [name]: `/x/${field}` }) as unknown as Record<string, string>)[field], `/x/${field}`);
  }
});

test('HEARTH_ROOT prefixes defaults but not explicit overrides', () => {
  const paths = agentPaths({ HEARTH_ROOT: '/tmp/root', HEAT_SHELL_CONFIG: '/explicit/heat-config', HEARTH_STATE_DIR: '/explicit/state' });
  assert.equal(paths.collectConfigFile, '/tmp/root/etc/os-collect-config.conf');
  assert.equal(paths.outboxDir, '/tmp/root/var/lib/hearth/outbox');
  assert.equal(paths.heatConfigFile, '/explicit/heat-config');
  assert.equal(paths.stateDir, '/explicit/state');
});

test('empty env values count as unset', () => {
  const paths = agentPaths({ HEARTH_ROOT: '', HEAT_CONFIG_DEPLOYED: '', HEARTH_STATE_DIR: '' });
  assert.equal(paths.heatConfigDeployedDir, '/var/lib/heat-config/deployed');
  assert.equal(paths.stateDir, '/var/lib/hearth');
});

test('the result is frozen and defaults to process.env', () => {
  const paths = agentPaths({});
  assert.ok(Object.isFrozen(paths));
  assert.throws(() => {
    (paths as { stateDir: string }).stateDir = '/elsewhere';
  }, TypeError);
  const saved = process.env.HEARTH_STATE_DIR;
  process.env.HEARTH_STATE_DIR = '/from/process/env';
  try {
    assert.equal(agentPaths().stateDir, '/from/process/env');
  } finally {
    if (saved === undefined) delete process.env.HEARTH_STATE_DIR;
    else process.env.HEARTH_STATE_DIR = saved;
  }
});
