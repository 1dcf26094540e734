import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseComponent } from './component.ts';

test('the first config whose actions hold the action wins; malformed entries are passed over', () => {
  const config = {
    configs: [
      null,
      { actions: 'CREATE', tool: 'script', config: 'not a list of actions' },
      { actions: ['CREATE'], tool: 'script', config: 'first' },
      { actions: ['CREATE', 'UPDATE'], tool: 'ansible', config: 'second' },
    ],
  };
  assert.deepEqual(chooseComponent(config, 'CREATE'), { config: 'first', group: 'script' });
  assert.deepEqual(chooseComponent(config, 'UPDATE'), { config: 'second', group: 'ansible' });
  assert.deepEqual(chooseComponent(config, 'DELETE'), {
    skip: 'Skipping group component, no valid script is defined for deploy action DELETE',
  });
  assert.ok('skip' in chooseComponent('a string config', 'CREATE'));
  assert.ok('skip' in chooseComponent({ configs: {} }, 'CREATE'));
});
