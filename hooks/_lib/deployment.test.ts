import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PyBigInt, PyFloat } from '@hearth/agent-kit/python-json';
import { HookInputError, isObject, parseDeployment } from './deployment.ts';
import { convertInput } from './inputs.ts';

const parse = (value: unknown) => parseDeployment(typeof value === 'string' ? value : JSON.stringify(value), convertInput);

test('a full deployment is read with defaults filled and inputs converted', () => {
  const { deployment, warnings } = parse({
    id: 'abc-1',
    group: 'script',
    config: 'x',
    inputs: [
      { name: 'n', type: 'Number', value: '3' },
      { name: 's', value: true },
      { name: 'd', type: 'Json', default: '{"a":1}' },
    ],
    outputs: [{ name: 'result' }, { name: 'err', error_output: true }],
    options: { tags: 'a' },
  });
  assert.deepEqual(warnings, []);
  assert.equal(deployment.name, 'abc-1');
  assert.equal(deployment.creationTime, '');
  assert.deepEqual(deployment.inputs, [
    { name: 'n', type: 'Number', value: 3 },
    { name: 's', type: 'String', value: 'true' },
    { name: 'd', type: 'Json', value: { a: 1 } },
  ]);
  assert.deepEqual(deployment.outputs, [
    { name: 'result', errorOutput: false },
    { name: 'err', errorOutput: true },
  ]);
  assert.deepEqual(deployment.options, { tags: 'a' });
});

test('group defaults to Heat::Ungrouped and a numeric id is accepted as text', () => {
  const { deployment } = parse({ id: 42 });
  assert.equal(deployment.id, '42');
  assert.equal(deployment.group, 'Heat::Ungrouped');
  assert.equal(deployment.config, null);
  assert.deepEqual(deployment.inputs, []);
});

test('malformed inputs, outputs and options are dropped with a warning, never a crash', () => {
  const { deployment, warnings } = parse({
    id: 'a',
    inputs: [null, 3, { type: 'String' }, { name: 'ok', value: null }],
    outputs: 'x',
    options: [1],
  });
  assert.deepEqual(deployment.inputs, [{ name: 'ok', type: 'String', value: '' }]);
  assert.deepEqual(deployment.outputs, []);
  assert.deepEqual(deployment.options, {});
  assert.equal(warnings.length, 5);
  assert.match(warnings.join('\n'), /"outputs" is not a list/);
});

test('stdin that is not a JSON object, or an id that is not a safe file name, is a HookInputError naming the value', () => {
  assert.throws(
    () => parse('not json'),
    (error: unknown) => error instanceof HookInputError && /not a JSON deployment/.test(error.message),
  );
  assert.throws(() => parse([1]), /must be one JSON object, got \[1\]/);
  assert.throws(() => parse('null'), HookInputError);
  assert.throws(() => parse({}), /"id" must be/);
  for (const id of ['../etc/passwd', '..', 'a/b', '', true]) assert.throws(() => parse({ id }), HookInputError, String(id));
});

test('numbers keep the form Python reads them in: floats PyFloat, big integers PyBigInt; JSON.stringify as before', () => {
  const text =
    '{"id": 1.0, "config": {"f": 1.0, "e": 1e16, "big": 12345678901234567890, "i": 3, "__proto__": {"x": NaN}},' +
    ' "inputs": [{"name": "n", "type": "Number", "value": 1.0}, {"name": "b", "type": "Boolean", "value": 0.0},' +
    ' {"name": "s", "value": 2.0}, {"name": "j", "type": "Json", "value": [1.5e-7]}], "options": {"debug": 1.0}}';
  const { deployment } = parse(text);
  assert.equal(deployment.id, '1.0');
  const config = deployment.config as Record<string, unknown>;
  assert.deepEqual(config.f, new PyFloat(1));
  assert.deepEqual(config.e, new PyFloat(1e16));
  assert.deepEqual(config.big, new PyBigInt(12345678901234567890n));
  assert.equal(config.i, 3);
  // An ordinary own key, as JSON.parse makes it, not the prototype.
  assert.ok(Object.hasOwn(config, '__proto__') && isObject(config.__proto__));
  assert.equal(isObject(config.f), false);
  assert.equal(JSON.stringify(config), '{"f":1,"e":10000000000000000,"big":12345678901234567000,"i":3,"__proto__":{"x":null}}');
  // A conversion that keeps the value keeps its form; one that changes it sees the number JSON.parse gave.
  assert.deepEqual(
    deployment.inputs.map((input) => input.value),
    [new PyFloat(1), false, '2', [new PyFloat(1.5e-7)]],
  );
  assert.deepEqual(deployment.options, { debug: 1 });
});
