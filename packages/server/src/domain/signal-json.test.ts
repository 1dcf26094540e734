import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serialiseValues, stringifyReusing } from './signal-json.ts';

// Bodies as they arrive: parsed from JSON text, so key order, integer-like keys and an own
// `__proto__` key are as JSON.parse makes them.
const BODIES = [
  '{}',
  '{"deploy_stdout":"configured step ok\\nconfigured step ok\\ndone\\n","deploy_stderr":"","deploy_status_code":0,"result":"ok"}',
  '{"deploy_status_code":"3","deploy_stderr":"boom \\"quoted\\" \\\\ back\\tslash\\u0001","z":null,"a":true}',
  '{"2":"two","10":"ten","b":[1,2,{"c":-0}],"1":"one","nested":{"x":{"y":[]}},"n":1e21,"f":0.1}',
  '{"emoji":"\\ud83d\\ude00 é ü 中文","deploy_stdout":"\\u2028\\u2029","__proto__":{"polluted":1},"empty":{}}',
  '{"deploy_stdout":null,"big":' + JSON.stringify('x\n'.repeat(5000)) + '}',
];

test('a body put together from its serialised values is exactly what JSON.stringify gives', () => {
  for (const text of BODIES) {
    const body = JSON.parse(text) as Record<string, unknown>;
    assert.equal(stringifyReusing(body, body, serialiseValues(body)), JSON.stringify(body), text.slice(0, 60));
  }
});

test('output values reuse the body\u2019s serialised values and serialise the rest, as JSON.stringify would', () => {
  const body = JSON.parse(BODIES[3]!) as Record<string, unknown>;
  const values = serialiseValues(body);
  // Kept from an earlier signal, then this signal's values, as signalOutcome merges them.
  const previous = JSON.parse('{"10":"old ten","kept":{"deep":["x"]},"b":"old b","deploy_stdout":"old"}') as Record<string, unknown>;
  const merged: Record<string, unknown> = { ...previous, b: body.b, 2: body['2'], deploy_stdout: null, deploy_status_code: null };
  assert.equal(stringifyReusing(merged, body, values), JSON.stringify(merged));

  // A value of the body's own is taken from the serialised values, not serialised again: a stand-in proves which was used.
  const marked = new Map(values).set('b', '"from the serialised values"');
  assert.equal(JSON.parse(stringifyReusing({ b: body.b }, body, marked)).b, 'from the serialised values');
  // The same key with another value (an earlier signal's) is serialised from that value.
  assert.deepEqual(JSON.parse(stringifyReusing({ b: ['other'] }, body, marked)), { b: ['other'] });
  // A key the body does not have is serialised from the object's value, even when a value of that name was serialised.
  assert.deepEqual(JSON.parse(stringifyReusing({ result: 'r' }, {}, new Map([['result', '"stale"']]))), { result: 'r' });
  assert.equal(stringifyReusing({}, body, values), '{}');
});
