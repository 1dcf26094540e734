import { test } from 'node:test';
import assert from 'node:assert/strict';
import { explodeDeployments } from './explode.ts';

function recorder() {
  const warnings: string[] = [];
  return { warnings, log: { warn: (message: string) => warnings.push(message) } };
}

test('the document comes first, then os-apply-config and ungrouped deployments by name', () => {
  const { log, warnings } = recorder();
  const document = {
    deployments: [
      { name: 'oac', group: 'os-apply-config', config: { a: 1 } },
      { name: 'script', group: 'script', config: 'echo hi' },
      { name: 'plain', config: { b: 2 } },
      { name: 'ungrouped', group: 'Heat::Ungrouped', config: { c: 3 } },
    ],
  };
  assert.deepEqual(explodeDeployments(document, ['deployments'], 'cfn', log), [
    ['cfn', document],
    ['oac', { a: 1 }],
    ['plain', { b: 2 }],
    ['ungrouped', { c: 3 }],
  ]);
  assert.deepEqual(warnings, []);
});

test('a non-list deployment key and a nameless deployment are warned about and skipped', () => {
  const { log, warnings } = recorder();
  const document = { deployments: { name: 'x' }, other: [{ config: {} }, { name: 'n', config: 1 }] };
  assert.deepEqual(explodeDeployments(document, ['deployments', 'other', 'absent'], 'heat', log), [
    ['heat', document],
    ['n', 1],
  ]);
  assert.deepEqual(warnings, [
    'Deployment-key deployments was found but does not contain a list.',
    'No name found for a deployment under other.',
  ]);
});

test('a deployment name that would leave the cache directory is warned about and skipped', () => {
  const { log, warnings } = recorder();
  const names = ['../escaped', 'a/b', '/etc/cron.d/x', '..', '.', '', 'ok..name'];
  const document = { deployments: names.map((name) => ({ name, group: 'os-apply-config', config: { name } })) };
  assert.deepEqual(explodeDeployments(document, ['deployments'], 'request', log), [
    ['request', document],
    ['ok..name', { name: 'ok..name' }],
  ]);
  assert.equal(warnings.length, 6);
  assert.match(warnings[0]!, /Deployment name "\.\.\/escaped" under deployments is not a plain file name; skipped\./);
});
