import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExitError } from './errors.ts';
import {
  coerceDefault,
  collect,
  parseChoice,
  parseHttpUrl,
  parseInputDeclaration,
  parseInputType,
  parseKeyValues,
  parseLimit,
  parseSeconds,
} from './flag-values.ts';

/** Asserts that `fn` throws a usage ExitError (64) whose message matches `pattern`. */
function assertUsage(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error: unknown) => error instanceof ExitError && error.exitCode === 64 && pattern.test(error.message));
}

test('collect appends repeated flag values', () => {
  assert.deepEqual(collect('b', collect('a', undefined)), ['a', 'b']);
});

test('parseKeyValues: K=V gives strings, K:=JSON gives JSON values, a later key wins', () => {
  assert.deepEqual(parseKeyValues(['a=1', 'b=x=y', 'c=', 'n:=8080', 'l:=["p","q"]', 'a=2'], '--input'), {
    a: '2',
    b: 'x=y',
    c: '',
    n: 8080,
    l: ['p', 'q'],
  });
});

test('parseKeyValues rejects missing keys and bad JSON, naming the flag and value', () => {
  assertUsage(() => parseKeyValues(['novalue'], '--input'), /--input "novalue" is not KEY=VALUE/);
  assertUsage(() => parseKeyValues(['=v'], '--input'), /is not KEY=VALUE/);
  assertUsage(() => parseKeyValues([':=1'], '--input'), /is not KEY=VALUE/);
  assertUsage(() => parseKeyValues(['n:={bad'], '--input'), /"\{bad" is not JSON/);
});

test('parseKeyValues refuses a key named __proto__ instead of dropping the input', () => {
  assertUsage(() => parseKeyValues(['__proto__=x'], '--input'), /--input "__proto__=x": hearth-server refuses a key named __proto__/);
  assertUsage(() => parseKeyValues(['__proto__:={"a":1}'], '--input'), /refuses a key named __proto__/);
  assert.deepEqual(Object.keys(parseKeyValues(['proto=1', 'constructor=2'], '--input')), ['proto', 'constructor']);
});

test('parseInputDeclaration reads NAME and NAME=DEFAULT', () => {
  assert.deepEqual(parseInputDeclaration('port'), { name: 'port' });
  assert.deepEqual(parseInputDeclaration('port=80'), { name: 'port', default: '80' });
  assert.deepEqual(parseInputDeclaration('greeting='), { name: 'greeting', default: '' });
  assertUsage(() => parseInputDeclaration('=80'), /has no name/);
});

test('parseInputType accepts Heat parameter types in any case', () => {
  assert.deepEqual(parseInputType('port=number'), { name: 'port', type: 'Number' });
  assert.deepEqual(parseInputType('tags=CommaDelimitedList'), { name: 'tags', type: 'CommaDelimitedList' });
  assertUsage(() => parseInputType('port=int'), /not NAME=TYPE/);
  assertUsage(() => parseInputType('port'), /not NAME=TYPE/);
});

test('coerceDefault parses Number, Boolean and Json defaults and keeps the rest as text', () => {
  assert.equal(coerceDefault('p', '80', 'Number'), 80);
  assert.equal(coerceDefault('b', 'yes', 'Boolean'), true);
  assert.equal(coerceDefault('b', 'False', 'Boolean'), false);
  assert.deepEqual(coerceDefault('j', '{"a":1}', 'Json'), { a: 1 });
  assert.equal(coerceDefault('s', '80', 'String'), '80');
  assert.equal(coerceDefault('l', 'a,b', 'CommaDelimitedList'), 'a,b');
  assertUsage(() => coerceDefault('p', 'eighty', 'Number'), /"eighty" is not a number/);
  assertUsage(() => coerceDefault('p', '', 'Number'), /is not a number/);
  assertUsage(() => coerceDefault('b', 'maybe', 'Boolean'), /not a boolean/);
  assertUsage(() => coerceDefault('j', '{', 'Json'), /not JSON/);
});

test('parseSeconds, parseLimit and parseChoice check their ranges', () => {
  assert.equal(parseSeconds('30', '--timeout'), 30);
  assertUsage(() => parseSeconds('0', '--timeout'), /--timeout "0" is not a whole number of seconds from 1/);
  assertUsage(() => parseSeconds('1.5', '--timeout'), /whole number/);
  assertUsage(() => parseSeconds('10s', '--timeout'), /whole number/);
  assertUsage(() => parseSeconds('700000', '--timeout'), /from 1 to 604800/);
  assert.equal(parseLimit('10', '--limit'), 10);
  assertUsage(() => parseLimit('1001', '--limit'), /from 1 to 1000/);
  assert.equal(parseChoice('update', '--action', ['CREATE', 'UPDATE']), 'UPDATE');
  assertUsage(() => parseChoice('DESTROY', '--action', ['CREATE', 'UPDATE']), /"DESTROY" is not one of CREATE, UPDATE/);
});

test('parseHttpUrl takes http(s) URLs with a host and says what is accepted otherwise, hiding credentials', () => {
  assert.equal(parseHttpUrl('https://alerts.example:8443/hook?x=1', '--ok-action', 'e'), 'https://alerts.example:8443/hook?x=1');
  assert.equal(parseHttpUrl('http://user:pw@127.0.0.1:9/a', '--ok-action', 'e'), 'http://user:pw@127.0.0.1:9/a');
  for (const bad of ['ftp://x', 'alerts.example/hook', 'http://', 'HTTP://x', ' http://x', 'http://a b/', '']) {
    assert.throws(
      () => parseHttpUrl(bad, '--ok-action', 'https://alerts.example/hook'),
      (error: unknown) =>
        error instanceof ExitError &&
        error.exitCode === 64 &&
        error.message === `--ok-action ${JSON.stringify(bad)} is not an http(s) URL` &&
        error.hint ===
          'give an http:// or https:// URL with a host (at most 2048 characters), e.g. --ok-action https://alerts.example/hook',
      bad,
    );
  }
  assertUsage(() => parseHttpUrl('ftp://user:secret@x/', '--ok-action', 'e'), /^--ok-action "ftp:\/\/\*\*\*@x\/" is not/);
  assertUsage(() => parseHttpUrl(`http://h/${'a'.repeat(2048)}`, '--ok-action', 'e'), /^--ok-action is 2057 characters long$/);
});
