import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as protocol from '@hearth/protocol';
import { DEPLOYMENT_ACTIONS, MAX_DEPLOYMENT_TIMEOUT, PARAMETER_TYPES, PROJECT_ID_PATTERN } from './protocol-values.ts';

test('the CLI copies of protocol values equal the protocol values', () => {
  assert.deepEqual(PARAMETER_TYPES, protocol.PARAMETER_TYPES);
  assert.deepEqual(DEPLOYMENT_ACTIONS, protocol.DEPLOYMENT_ACTIONS);
  assert.equal(MAX_DEPLOYMENT_TIMEOUT, protocol.MAX_DEPLOYMENT_TIMEOUT);
});

test('PROJECT_ID_PATTERN accepts what the ProjectId schema accepts', () => {
  // The schema is a JSON Schema object at run time; read its constraints directly.
  const schema = protocol.ProjectId as unknown as { pattern: string; minLength: number; maxLength: number };
  const schemaAccepts = (id: string): boolean =>
    new RegExp(schema.pattern).test(id) && id.length >= schema.minLength && id.length <= schema.maxLength;
  for (const id of ['default', 'a', 'p.1_x-Y', '', 'a/b', 'a b', 'ü', 'x'.repeat(64), 'x'.repeat(65)]) {
    assert.equal(PROJECT_ID_PATTERN.test(id), schemaAccepts(id), JSON.stringify(id));
  }
});
