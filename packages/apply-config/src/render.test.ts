import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePyJson } from '@hearth/agent-kit/python-json';
import { renderMustache } from './render.ts';

// Expected outputs were produced by os-apply-config 12.0.0 (pystache 0.6.0) on the same inputs.
const cases: Array<[string, string, string]> = [
  ['{{a}}', '{"a": "x<&>\\"y"}', 'x<&>"y'],
  [
    '{{a}} {{b}} {{c}} {{d}} {{e}} {{f}}',
    '{"a": 1, "b": 1.0, "c": true, "d": null, "e": [1, 2.5, "é"], "f": {"k": {"z": 1}, "1": 2}}',
    '1 1.0 true  [1, 2.5, "\\u00e9"] {"k": {"z": 1}, "1": 2}',
  ],
  ['{{missing}}|{{a.b.c}}|{{a.x}}', '{"a": {"b": {"c": "deep"}}}', '|deep|'],
  ['{{#l}}[{{.}}]{{/l}}', '{"l": [1, "two", null, {"x": 1}, [3]]}', '[1][two][][{"x": 1}][[3]]'],
  ['{{#l}}{{n}}-{{top}}\n{{/l}}', '{"l": [{"n": 1}, {"n": 2, "top": "over"}], "top": "T"}', '1-T\n2-over\n'],
  ['{{#d}}yes{{/d}}{{^d}}no{{/d}}', '{"d": {}}', 'no'],
  ['{{#d}}yes{{/d}}{{^d}}no{{/d}}', '{"d": 0.0}', 'no'],
  ['{{#d}}yes {{.}}{{/d}}{{^d}}no{{/d}}', '{"d": "s"}', 'yes s'],
  ['{{#d}}yes {{.}}{{/d}}', '{"d": true}', 'yes true'],
  ['a\n  {{#s}}  \n  x\n  {{/s}}\nb\n', '{"s": true}', 'a\n    \n  x\nb\n'],
  ['a\n  {{#s}}\n  x\n  {{/s}}\nb\n', '{"s": true}', 'a\n  x\nb\n'],
  ['a\r\n{{! c }}\r\nb {{! x}} c\n', '{}', 'a\r\nb  c\n'],
  ['{{=<% %>=}}<% a %> {{a}}\n<%={{ }}=%>{{a}}', '{"a": "A"}', 'A {{a}}\nA'],
  ['{{{a}}} {{&a}} {{ a }}', '{"a": "<b>"}', '<b> <b> <b>'],
  ['x {{#a}}unclosed {{b}}', '{"a": 1, "b": 2}', 'unclosed 2'],
  ['{{#a.b}}{{c}}{{/a.b}}', '{"a": {"b": {"c": "C"}}, "c": "outer"}', 'C'],
  ['{{#a}}{{b.c}}{{/a}}', '{"a": {"x": 1}, "b": {"c": "found"}}', 'found'],
  ['{{l.0}}|{{s.length}}', '{"l": [1], "s": "abc"}', '|'],
  ['  {{>part}}\n{{a}}', '{"a": 1}', '1'],
  [
    '{{big}} {{f1}} {{f2}} {{neg}}',
    '{"big": 123456789012345678901234567890, "f1": 1e16, "f2": 0.00001, "neg": -0.0}',
    '123456789012345678901234567890 1e+16 1e-05 -0.0',
  ],
  [
    '{{deployments}}',
    '{"deployments": [{"name": "d1", "config": "#!/bin/sh\\necho ü", "inputs": [{"name": "x", "value": 1.5e-7}]}]}',
    '[{"name": "d1", "config": "#!/bin/sh\\necho \\u00fc", "inputs": [{"name": "x", "value": 1.5e-07}]}]',
  ],
];

test('renders as pystache with os-apply-config JsonRenderer', () => {
  for (const [template, data, expected] of cases) {
    assert.equal(renderMustache(template, parsePyJson(data)), expected, template);
  }
});

test('a section closed by the wrong name or a bad delimiter change is an error', () => {
  assert.throws(() => renderMustache('{{#a}}x{{/b}}', new Map()), /Section end tag mismatch: b != a/);
  assert.throws(() => renderMustache('x{{/b}}', new Map()), /Section end tag mismatch: b != None/);
  assert.throws(() => renderMustache('{{=<%=}}', new Map()), /invalid delimiters/);
});
