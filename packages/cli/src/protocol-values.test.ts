import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as protocol from '@hearth/protocol';
import { BODY_LIMITS } from '../../server/src/routes/limits.ts';
import {
  CONFIG_TRANSPORTS,
  DEPLOYMENT_ACTIONS,
  MAX_CONFIG_REQUEST_BYTES,
  MAX_CONFIG_TEXT_LENGTH,
  MAX_DEPLOYMENT_TIMEOUT,
  MAX_URL_EXPIRES_IN,
  MAX_WAIT_CONDITION_COUNT,
  MAX_WAIT_CONDITION_TIMEOUT,
  MIN_WAIT_CONDITION_TIMEOUT,
  PARAMETER_TYPES,
  PROJECT_ID_PATTERN,
  RESOURCE_NAME_PATTERN,
  STACK_NAME_PATTERN,
  UUID_PATTERN,
} from './protocol-values.ts';

/** The constraints of a string schema, read from the JSON Schema object it is at run time. */
interface StringSchema {
  pattern: string;
  minLength: number;
  maxLength: number;
}

/** Checks that `copy` accepts exactly what the string schema accepts, over `samples`. */
function assertSameStrings(copy: RegExp, schemaValue: unknown, samples: readonly string[]): void {
  const schema = schemaValue as StringSchema;
  const schemaAccepts = (text: string): boolean =>
    new RegExp(schema.pattern).test(text) && text.length >= schema.minLength && text.length <= schema.maxLength;
  for (const text of samples) assert.equal(copy.test(text), schemaAccepts(text), JSON.stringify(text));
}

test('the CLI copies of protocol values equal the protocol values', () => {
  assert.deepEqual(PARAMETER_TYPES, protocol.PARAMETER_TYPES);
  assert.deepEqual(DEPLOYMENT_ACTIONS, protocol.DEPLOYMENT_ACTIONS);
  assert.equal(MAX_DEPLOYMENT_TIMEOUT, protocol.MAX_DEPLOYMENT_TIMEOUT);
  assert.deepEqual(CONFIG_TRANSPORTS, protocol.CONFIG_TRANSPORTS);
  assert.equal(MIN_WAIT_CONDITION_TIMEOUT, protocol.MIN_WAIT_CONDITION_TIMEOUT);
  assert.equal(MAX_WAIT_CONDITION_TIMEOUT, protocol.MAX_WAIT_CONDITION_TIMEOUT);
  assert.equal(MAX_WAIT_CONDITION_COUNT, protocol.MAX_WAIT_CONDITION_COUNT);
  const urlExpiresIn = (protocol.WaitConditionCreate as unknown as { properties: { url_expires_in: { maximum: number } } }).properties
    .url_expires_in;
  assert.equal(MAX_URL_EXPIRES_IN, urlExpiresIn.maximum);
  const configText = (protocol.ConfigBody as unknown as { anyOf: Array<{ type: string; maxLength?: number }> }).anyOf.find(
    (schema) => schema.type === 'string',
  );
  assert.equal(MAX_CONFIG_TEXT_LENGTH, configText?.maxLength);
  assert.equal(MAX_CONFIG_REQUEST_BYTES, BODY_LIMITS.config);
});

test('PROJECT_ID_PATTERN accepts what the ProjectId schema accepts', () => {
  assertSameStrings(PROJECT_ID_PATTERN, protocol.ProjectId, [
    'default',
    'a',
    'p.1_x-Y',
    '',
    'a/b',
    'a b',
    'ü',
    'x'.repeat(64),
    'x'.repeat(65),
  ]);
});

test('STACK_NAME_PATTERN accepts what the StackName schema accepts', () => {
  assertSameStrings(STACK_NAME_PATTERN, protocol.StackName, [
    'web',
    'W.e_b-1',
    '',
    '1web',
    '-web',
    'a/b',
    'a b',
    'a:b',
    'ü',
    `a${'x'.repeat(254)}`,
    `a${'x'.repeat(255)}`,
  ]);
});

test('RESOURCE_NAME_PATTERN accepts what the ResourceName schema accepts', () => {
  assertSameStrings(RESOURCE_NAME_PATTERN, protocol.ResourceName, [
    'ready',
    '1ready',
    'a:b.c_d-e',
    '',
    'a/b',
    'a b',
    'ü',
    'x'.repeat(255),
    'x'.repeat(256),
  ]);
});

test('UUID_PATTERN accepts what the Uuid schema accepts', () => {
  const schema = new RegExp((protocol.Uuid as unknown as StringSchema).pattern);
  for (const text of [
    '0d1f2e3c-4b5a-4978-8a6b-5c4d3e2f1a0b',
    'D1D1D1D1-0000-4000-8000-000000000001',
    'nope',
    '',
    '0d1f2e3c4b5a49788a6b5c4d3e2f1a0b',
    '0d1f2e3c-4b5a-4978-8a6b-5c4d3e2f1a0',
    '0d1f2e3c-4b5a-4978-8a6b-5c4d3e2f1a0bc',
    'g d1f2e3c-4b5a-4978-8a6b-5c4d3e2f1a0b',
  ]) {
    assert.equal(UUID_PATTERN.test(text), schema.test(text), JSON.stringify(text));
  }
});
