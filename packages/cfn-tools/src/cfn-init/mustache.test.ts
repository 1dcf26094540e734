import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { MustacheError, pyStr, renderMustache } from './mustache.ts';

test('values are HTML-escaped like pystache, unless triple or & tags', () => {
  const context = { v: `<a href="x">&'` };
  assert.equal(renderMustache('{{v}}|{{{v}}}|{{& v}}', context), `&lt;a href=&quot;x&quot;&gt;&amp;&#x27;|<a href="x">&'|<a href="x">&'`);
});

test('non-strings print as Python str(); missing names print nothing; dotted names walk objects', () => {
  const context = { t: true, f: false, n: null, i: 3, x: 1.5, l: [1, 'a'], d: { k: { deep: 'yes' } } };
  assert.equal(
    renderMustache('{{t}} {{f}} {{n}} {{i}} {{x}} {{{l}}} {{{d}}} [{{missing}}] {{d.k.deep}} [{{d.nope}}]', context),
    "True False None 3 1.5 [1, 'a'] {'k': {'deep': 'yes'}} [] yes []",
  );
  assert.equal(pyStr(["it's"]), `["it's"]`);
});

test('sections iterate lists, enter objects, test truthiness; inverted sections; standalone tag lines vanish', () => {
  const template =
    'servers:\n{{#servers}}\n  - {{name}} ({{port}})\n{{/servers}}\n{{^empty}}\nnone\n{{/empty}}\n{{#db}}db={{host}}{{/db}}\n{{#off}}hidden{{/off}}{{! a comment }}\n';
  const context = {
    servers: [
      { name: 'a', port: 80 },
      { name: 'b', port: 81 },
    ],
    empty: [],
    db: { host: 'h' },
    off: '',
  };
  assert.equal(renderMustache(template, context), 'servers:\n  - a (80)\n  - b (81)\nnone\ndb=h\n\n');
});

test('an outer name is visible inside a section; {{.}} is the current item', () => {
  assert.equal(renderMustache('{{#l}}{{p}}{{.}};{{/l}}', { p: '>', l: ['x', 'y'] }), '&gt;x;&gt;y;');
});

test('malformed templates are MustacheErrors naming the section', () => {
  assert.throws(
    () => renderMustache('{{#a}}x', {}),
    (error: Error) => error instanceof MustacheError && /section \{\{#a\}\} is never closed/.test(error.message),
  );
  assert.throws(() => renderMustache('{{#a}}x{{/b}}', {}), /section end \{\{\/b\}\} does not close \{\{#a\}\}/);
  assert.throws(() => renderMustache('{{=<% %>=}}', {}), /delimiter changes/);
});

// The same templates rendered by pystache (Debian's python3-pystache, which AWS cfn-init uses) when it is installed.
const pystache = spawnSync('/usr/bin/python3', ['-c', 'import pystache'], { stdio: 'ignore' }).status === 0;

test('renders as pystache does', { skip: !pystache && 'python3-pystache is not installed (apt-get install -y python3-pystache)' }, () => {
  const cases: Array<[string, unknown]> = [
    [
      'a={{a}} b={{b}} n={{n}} f={{f}} l={{l}} d={{d}} m=[{{m}}] raw={{{a}}} amp={{&a}} x={{d.x}}',
      { a: `<&"'>`, b: true, n: null, f: 1.5, l: [1, 'x'], d: { x: 1 } },
    ],
    ['{{#l}}[{{.}}]{{/l}}{{^e}}empty{{/e}}\n  {{#b}}\nyes\n  {{/b}}\nend\n', { l: [1, 2], e: [], b: true }],
    ['{{#o}}{{k}}-{{top}}{{/o}} {{^o}}no{{/o}} {{#z}}zero{{/z}}', { o: { k: 'v' }, top: 'T', z: 0 }],
  ];
  for (const [template, context] of cases) {
    const script = 'import json,sys,pystache; t,c=json.load(sys.stdin); sys.stdout.write(pystache.render(t,c))';
    const result = spawnSync('/usr/bin/python3', ['-c', script], { input: JSON.stringify([template, context]), encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(renderMustache(template, context), result.stdout, template);
  }
});
