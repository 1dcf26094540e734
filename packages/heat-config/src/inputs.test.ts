import { test } from 'node:test';
import assert from 'node:assert/strict';
import { convertInputValue, convertInputs, inputText } from './inputs.ts';

const value = (type: unknown, v: unknown): unknown => convertInputValue(type, v).value;

test('String: text the way a user writes it, not Python str()', () => {
  assert.equal(value('String', 'x'), 'x');
  assert.equal(value('String', true), 'true');
  assert.equal(value('String', false), 'false');
  assert.equal(value('String', null), '');
  assert.equal(value('String', 3), '3');
  assert.equal(value('String', 1.5), '1.5');
  assert.equal(value('String', { a: 1, b: [true, null] }), '{"a":1,"b":[true,null]}');
  assert.equal(value('String', ['x', 2]), '["x",2]');
  assert.equal(value(undefined, 7), '7', 'a missing type is String');
});

test('Number: numbers and numeric text become decimal text; anything else is passed as text with a warning', () => {
  assert.equal(value('Number', 3), '3');
  assert.equal(value('Number', -2.25), '-2.25');
  assert.equal(value('Number', ' 42 '), '42');
  assert.equal(value('Number', '1e3'), '1e3');
  assert.equal(value('Number', null), '');
  assert.deepEqual(convertInputValue('Number', 'abc'), { value: 'abc', problem: 'is not a number; passed as text' });
  assert.deepEqual(convertInputValue('Number', Number.NaN), { value: '', problem: 'is not a finite number' });
});

test('Boolean: Heat spellings become true/false', () => {
  for (const yes of [true, 'true', 'True', 'yes', 'ON', 'y', 't', '1', 1]) assert.equal(value('Boolean', yes), 'true', String(yes));
  for (const no of [false, 'false', 'No', 'off', 'n', 'f', '0', 0]) assert.equal(value('Boolean', no), 'false', String(no));
  assert.equal(value('Boolean', null), '');
  assert.deepEqual(convertInputValue('Boolean', 'maybe'), { value: 'maybe', problem: 'is not a boolean; passed as text' });
});

test('Json: objects and lists stay; JSON text of one is parsed; scalars become text', () => {
  assert.deepEqual(value('Json', { a: [1] }), { a: [1] });
  assert.deepEqual(value('Json', [1, 'x']), [1, 'x']);
  assert.deepEqual(value('Json', '{"a": {"b": 2}}'), { a: { b: 2 } });
  assert.equal(value('Json', '"just text"'), '"just text"');
  assert.equal(value('Json', 5), '5');
  assert.equal(value('Json', true), 'true');
  assert.equal(value('Json', null), '');
  assert.deepEqual(convertInputValue('Json', '{nope'), { value: '{nope', problem: 'is not valid JSON; passed as text' });
});

test('CommaDelimitedList: lists become lists of text; a comma-delimited string stays as written', () => {
  assert.deepEqual(value('CommaDelimitedList', ['a', 1, true, null, { k: 1 }]), ['a', '1', 'true', '', '{"k":1}']);
  assert.equal(value('CommaDelimitedList', 'a, b,c'), 'a, b,c');
  assert.equal(value('CommaDelimitedList', 3), '3');
  assert.deepEqual(value('CommaDelimitedList', null), []);
  assert.deepEqual(convertInputValue('CommaDelimitedList', { a: 1 }).value, ['{"a":1}']);
});

test('no value of any type comes out as something a hook cannot put in its environment', () => {
  const samples = [null, undefined, true, false, 0, 3.5, -1, 'x', '', [], [1, null], {}, { a: { b: [1] } }, Number.POSITIVE_INFINITY];
  for (const type of ['String', 'Number', 'Boolean', 'Json', 'CommaDelimitedList', 'Weird', undefined]) {
    for (const sample of samples) {
      const converted = convertInputValue(type, sample).value;
      const ok =
        typeof converted === 'string' ||
        (Array.isArray(converted) && (type === 'Json' || converted.every((item) => typeof item === 'string'))) ||
        (typeof converted === 'object' && converted !== null && type !== 'String' && type !== 'Number' && type !== 'Boolean');
      assert.ok(ok, `${String(type)} ${JSON.stringify(sample)} -> ${JSON.stringify(converted)}`);
    }
  }
});

test('convertInputs keeps other keys, drops nameless entries, treats a missing value as null, and warns by name only', () => {
  const { inputs, warnings } = convertInputs([
    { name: 'port', type: 'Number', value: 8080, description: 'the port' },
    { name: 'secret', type: 'Number', value: 'hunter2' },
    { type: 'String', value: 'no name' },
    'garbage',
    { name: 'flag', type: 'Boolean' },
  ]);
  assert.deepEqual(inputs, [
    { name: 'port', type: 'Number', value: '8080', description: 'the port' },
    { name: 'secret', type: 'Number', value: 'hunter2' },
    { name: 'flag', type: 'Boolean', value: '' },
  ]);
  assert.deepEqual(warnings, [
    'input secret (Number) is not a number; passed as text',
    'input #2 has no name; dropped',
    'input #3 has no name; dropped',
  ]);
  assert.ok(!warnings.join().includes('hunter2'), 'values never reach the log');
  assert.deepEqual(convertInputs(undefined), { inputs: [], warnings: [] });
  assert.deepEqual(convertInputs({ a: 1 }).warnings, ['inputs is a object, not a list; no inputs passed']);
  assert.equal(inputText(10n), '10');
});
