import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeploymentSignal } from '../../protocol/src/signal.ts';
import { bodyProblem } from '../../server/src/body-parser.ts';
import { bodyChecker } from '../../server/src/domain/body-check.ts';
import { MAX_SIGNAL_DEPTH, sendableSignal } from './signal-sendable.ts';

// What hearth-server refuses in a signal body: its body parser's check, then the signal schema.
const schemaProblem = bodyChecker(DeploymentSignal);
const refused = (body: unknown): string | undefined => bodyProblem(body) ?? schemaProblem(body) ?? undefined;
const nested = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`;

test('whatever hearth-server refuses in a parsed result is made a body it takes, each change named at the end of deploy_stderr', () => {
  const cases = [
    `{"v": {"a": ${nested(MAX_SIGNAL_DEPTH)}}}`,
    '{"v": [1e400]}',
    '{"deploy_status_code": -1e400}',
    '{"__proto__": {"x": 1}}',
    '{"v": [{"__proto__": 2}]}',
    '{"constructor": {"prototype": {}}}',
    '{"v": {"constructor": {"prototype": 1}}}',
    '{"deploy_stdout": {"a": 1}}',
    '{"deploy_stderr": 5}',
    `{"v": ${nested(100_000)}}`,
  ];
  for (const text of cases) {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    assert.ok(refused(parsed) !== undefined, `the server refuses ${text.slice(0, 60)}`);
    const { data, changed } = sendableSignal(parsed, 'a-tool');
    assert.equal(refused(JSON.parse(JSON.stringify(data))), undefined, text.slice(0, 60));
    assert.equal(changed.length, 1, text.slice(0, 60));
    assert.match(data.deploy_stderr as string, new RegExp(`^(5\\n)?\\[a-tool: ${changed[0]} was (sent as JSON text|left out)`));
  }
});

test('the deepest nesting the server takes is left alone, and so is a result it takes as it is', () => {
  const deepest = JSON.parse(`{"v": ${nested(MAX_SIGNAL_DEPTH - 1)}, "deploy_stdout": null}`) as Record<string, unknown>;
  assert.equal(refused(deepest), undefined);
  const plain = { deploy_status_code: 0, deploy_stderr: 'e', a: { b: [1, 'é', null, { c: true }] }, big: 1e300 };
  for (const data of [deepest, plain]) assert.deepEqual(sendableSignal(data, 'a-tool'), { data, changed: [] });
});

test('notes follow what deploy_stderr held, and replace a deploy_stderr that was not text', () => {
  const parsed = JSON.parse('{"deploy_stderr": "no newline", "n": 1e400, "deploy_status_code": 2}') as Record<string, unknown>;
  assert.deepEqual(sendableSignal(parsed, 'x').data, {
    deploy_stderr: 'no newline\n[x: n was sent as JSON text: it is or holds a number too large for JSON]\n',
    n: 'Infinity',
    deploy_status_code: 2,
  });
  const notText = sendableSignal({ deploy_stderr: ['a'] }, 'x').data;
  assert.equal(notText.deploy_stderr, '["a"]\n[x: deploy_stderr was sent as JSON text: it is not text]\n');
});
