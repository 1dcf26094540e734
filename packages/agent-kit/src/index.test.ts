import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kit from './index.ts';

test('the package entry exports the whole agent-kit API', () => {
  const functions = [
    'agentPaths',
    'writeFileAtomic',
    'writeFileAtomicSync',
    'acquireLock',
    'withLock',
    'createLogger',
    'isLogLevel',
    'runProcess',
    'httpRequest',
    'closeHttpConnections',
    'parseIni',
    'loadIniFiles',
    'iniValue',
    'osloInterpolate',
    'runMain',
    'isSecretName',
    'redactUrl',
    'processTree',
    'signalAll',
    'openSecretStore',
    'createFileSecretStore',
    'createKeyringSecretStore',
    'checkSecretName',
    'checkSecretValue',
  ] as const;
  for (const name of functions) assert.equal(typeof kit[name], 'function', name);
  assert.ok(new kit.LockBusyError('/x.lock', 1) instanceof Error);
  assert.ok(new kit.HttpRequestError('ERR_HTTP_NETWORK', 'GET', 'http://h/', 'down', 1) instanceof Error);
  assert.ok(new kit.IniParseError(1, 'bad') instanceof Error);
  assert.ok(new kit.ExitError(1, 'bad') instanceof Error);
  assert.ok(new kit.SecretStoreError('ERR_SECRET_CONFIG', 'x') instanceof Error);
  assert.equal(kit.AGENT_PATH_ENV.heatConfigFile, 'HEAT_SHELL_CONFIG');
});
