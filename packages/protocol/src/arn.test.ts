import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resourceArn, stackArn } from './arn.ts';
import { arnFromPath, parseArn } from './arn.ts';

const STACK_ID = '5f1c2a3e-0000-4000-8000-000000000001';

test('parseArn reads a stack ARN and a resource ARN', () => {
  assert.deepEqual(parseArn(`arn:openstack:heat::tenant1:stacks/mystack/${STACK_ID}`), {
    project: 'tenant1',
    stackName: 'mystack',
    stackId: STACK_ID,
    resourceName: null,
  });
  assert.deepEqual(parseArn(`arn:openstack:heat::tenant1:stacks/mystack/${STACK_ID}/resources/deployment`), {
    project: 'tenant1',
    stackName: 'mystack',
    stackId: STACK_ID,
    resourceName: 'deployment',
  });
});

test('parseArn accepts ARN in any case but needs openstack and heat exactly, as Heat does', () => {
  assert.equal(parseArn(`ARN:openstack:heat::t:stacks/s/${STACK_ID}`)?.project, 't');
  assert.equal(parseArn(`arn:OpenStack:heat::t:stacks/s/${STACK_ID}`), null);
  assert.equal(parseArn(`arn:openstack:nova::t:stacks/s/${STACK_ID}`), null);
  assert.equal(parseArn(`urn:openstack:heat::t:stacks/s/${STACK_ID}`), null);
});

test('parseArn unquotes each component', () => {
  assert.deepEqual(parseArn(`arn:openstack:heat::proj%20one%2Fx:stacks/my%2Dstack/${STACK_ID}/resources/r%3A1`), {
    project: 'proj one/x',
    stackName: 'my-stack',
    stackId: STACK_ID,
    resourceName: 'r:1',
  });
});

test('parseArn keeps colons that belong to the resource part', () => {
  assert.equal(parseArn(`arn:openstack:heat::t:stacks/s/${STACK_ID}/resources/a:b`)?.resourceName, 'a:b');
});

test('parseArn rejects malformed ARNs', () => {
  for (const bad of [
    '',
    'arn:openstack:heat',
    `arn:openstack:heat::t:stack/s/${STACK_ID}`,
    'arn:openstack:heat::t:stacks/s',
    'arn:openstack:heat::t:stacks/s/',
    `arn:openstack:heat:::stacks/s/${STACK_ID}`,
    `arn:openstack:heat::t:stacks/s/${STACK_ID}/resources/`,
    `arn:openstack:heat::t:stacks/s/${STACK_ID}/resources/r/events/e`,
    `arn:openstack:heat::t:stacks/s/${STACK_ID}/outputs/o`,
    `arn:openstack:heat::t%ZZ:stacks/s/${STACK_ID}`,
  ]) {
    assert.equal(parseArn(bad), null, bad);
  }
});

test('round trip with the protocol builders, including a project that needs encoding', () => {
  for (const project of ['tenant1', 'proj one/ü:x', '100%']) {
    assert.deepEqual(parseArn(stackArn(project, 'mystack', STACK_ID)), {
      project,
      stackName: 'mystack',
      stackId: STACK_ID,
      resourceName: null,
    });
    assert.deepEqual(parseArn(resourceArn(project, 'mystack', STACK_ID, 'my.server:0')), {
      project,
      stackName: 'mystack',
      stackId: STACK_ID,
      resourceName: 'my.server:0',
    });
  }
});

test('arnFromPath finds a percent-encoded ARN as Heat emits it, and ignores the query string', () => {
  const arn = resourceArn('proj one', 'mystack', STACK_ID, 'deployment');
  const encoded = encodeURIComponent(arn).replaceAll('%2F', '/');
  const found = arnFromPath(`/v1/signal/${encoded}?Timestamp=x&Signature=y`);
  assert.equal(found, arn);
  assert.equal(parseArn(found ?? '')?.project, 'proj one');
});

test('arnFromPath finds the encoded prefix in any case', () => {
  assert.equal(
    arnFromPath(`/v1/waitcondition/arn%3aopenstack%3Aheat%3a%3At%3Astacks/s/${STACK_ID}`),
    `arn:openstack:heat::t:stacks/s/${STACK_ID}`,
  );
});

test('arnFromPath finds a literal ARN in an already decoded path', () => {
  const arn = resourceArn('proj one', 'mystack', STACK_ID, 'deployment');
  assert.equal(arnFromPath(`/v1/signal/${arn}`), arn);
});

test('arnFromPath answers null without an ARN or with broken encoding', () => {
  assert.equal(arnFromPath('/v1/signal/'), null);
  assert.equal(arnFromPath('/v1/signal/stacks/s/id'), null);
  assert.equal(arnFromPath('/v1/signal?x=/arn:openstack:heat::t:stacks/s/id'), null);
  assert.equal(arnFromPath('/v1/signal/arn%3Aopenstack%3Aheat%3A%3At%ZZ'), null);
});
