import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigSetError, selectConfigs } from './config-sets.ts';

test('without configSets the config key is run, and -c is an error', () => {
  assert.deepEqual(selectConfigs({ config: {} }, undefined), ['config']);
  assert.throws(
    () => selectConfigs({ config: {} }, 'web'),
    (error: Error) => error instanceof ConfigSetError && /web requested, but the metadata has no configSets/.test(error.message),
  );
});

test('the default set runs when -c is not given; a missing default says so', () => {
  assert.deepEqual(selectConfigs({ configSets: { default: ['b', 'a'] } }, undefined), ['b', 'a']);
  assert.throws(() => selectConfigs({ configSets: { web: ['a'] } }, undefined), /no configSet named default \(have: web\); pass -c NAME/);
});

test('nested {"ConfigSet": ...} references expand in place, at any depth (broken in the original on Python 3)', () => {
  const init = {
    configSets: {
      base: ['install', 'users'],
      app: [{ ConfigSet: 'base' }, 'deploy'],
      default: ['first', { ConfigSet: 'app' }, 'last'],
    },
  };
  assert.deepEqual(selectConfigs(init, undefined), ['first', 'install', 'users', 'deploy', 'last']);
});

test('-c takes a comma list (blanks around names ignored) and runs the sets in that order', () => {
  const init = { configSets: { a: ['x'], b: ['y', 'z'], default: ['d'] } };
  assert.deepEqual(selectConfigs(init, ' b , a '), ['y', 'z', 'x']);
  assert.deepEqual(selectConfigs(init, 'a,b,a'), ['x', 'y', 'z', 'x']);
});

test('a set given as a single string is one config', () => {
  assert.deepEqual(selectConfigs({ configSets: { default: 'only' } }, undefined), ['only']);
});

test('bad configSets are errors naming the set and the problem', () => {
  assert.throws(
    () => selectConfigs({ configSets: { default: ['a'] } }, 'nope'),
    /configSet nope requested but not in configSets \(have: default\)/,
  );
  assert.throws(
    () => selectConfigs({ configSets: { default: [{ ConfigSet: 'ghost' }] } }, undefined),
    /configSet default refers to undefined configSet ghost/,
  );
  assert.throws(
    () => selectConfigs({ configSets: { default: [{ Other: 'x' }] } }, undefined),
    /entry \{"Other":"x"\} is neither a config name nor/,
  );
  assert.throws(
    () => selectConfigs({ configSets: { default: [{ ConfigSet: 'a', extra: 1 }], a: ['x'] } }, undefined),
    /is neither a config name/,
  );
  assert.throws(() => selectConfigs({ configSets: { default: [] } }, undefined), /configSet default is empty/);
  assert.throws(() => selectConfigs({ configSets: { default: 3 } }, undefined), /configSet default must be a list, not 3/);
  assert.throws(() => selectConfigs({ configSets: ['default'] }, undefined), /configSets must be an object of lists/);
});

test('a cycle of references is an error with the path, not a stack overflow', () => {
  const init = { configSets: { default: [{ ConfigSet: 'a' }], a: ['x', { ConfigSet: 'b' }], b: [{ ConfigSet: 'a' }] } };
  assert.throws(() => selectConfigs(init, undefined), /configSet a refers to itself: default -> a -> b -> a/);
});

test('configSets null or {} is no configSets (the original tests `not configSets`): config runs, -c is an error', () => {
  for (const configSets of [{}, null]) {
    assert.deepEqual(selectConfigs({ configSets, config: {} }, undefined), ['config']);
    assert.throws(() => selectConfigs({ configSets, config: {} }, 'web'), /web requested, but the metadata has no configSets/);
  }
});
