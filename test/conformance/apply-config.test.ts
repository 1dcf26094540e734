// Debian's os-apply-config (python3-os-apply-config 12, pystache 0.6) and hearth's, side by side:
// the same templates, control files, metadata and flags go to both, each in its own sandbox run
// (see clients.ts), and the rendered files (content, mode, owner, group), what --key prints and
// the exit codes must be identical.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runClient } from './clients.ts';

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'apply-config');
/** The templates the images ship (the heat-config element's, with their 0600 .oac files). */
const SHIPPED_TEMPLATES = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../images/elements/hearth-agent/static/usr/libexec/os-apply-config/templates',
);
const OURS = [process.execPath, join(PACKAGE, 'bin', 'os-apply-config.js')];
const ORIGINAL = ['os-apply-config'];

/** Local to this file: the harness's skipUnlessClients checks other clients, not os-apply-config. */
function skipUnlessOriginal(): false | string {
  if (spawnSync('sh', ['-c', 'command -v os-apply-config'], { stdio: 'ignore' }).status === 0) return false;
  const message = 'Debian os-apply-config missing: apt-get install -y python3-os-apply-config';
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing original is a failure)`);
  return message;
}

const skip = skipUnlessOriginal();

/** One side-by-side scenario: files under the scratch dir, shell set-up, then several invocations. */
interface Scenario {
  /** Files by path relative to the scratch dir (templates/…, metadata, pre-existing out/…). */
  files: Record<string, string>;
  /** Shell lines run first, in the scratch dir (chmod, chown of pre-existing outputs). */
  setup?: string[];
  /** Arguments of each invocation; `@SCRATCH@` is the run's private dir. */
  runs: string[][];
  /** Extra environment for every invocation. */
  env?: Record<string, string>;
}

interface Outcome {
  runs: Array<{ exitCode: number; stdout: string }>;
  files: Record<string, { mode: string; uid: number; gid: number; content: string }>;
}

const quote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;

/** Walks @SCRATCH@/out and prints every invocation's exit code and stdout, and every file, as JSON. */
const MANIFEST = `const fs = require('node:fs'); const path = require('node:path');
const [scratch, count] = process.argv.slice(1); const out = path.join(scratch, 'out'); const files = {};
const walk = (dir) => { for (const name of fs.readdirSync(dir).sort()) { const p = path.join(dir, name); const s = fs.lstatSync(p);
  if (s.isDirectory()) walk(p); else files[path.relative(out, p)] = { mode: (s.mode & 0o7777).toString(8), uid: s.uid, gid: s.gid, content: fs.readFileSync(p, 'utf8') }; } };
if (fs.existsSync(out)) walk(out);
const runs = []; for (let i = 0; i < Number(count); i++) runs.push({ exitCode: Number(fs.readFileSync(path.join(scratch, 'rc.' + i), 'utf8')), stdout: fs.readFileSync(path.join(scratch, 'stdout.' + i), 'utf8') });
process.stdout.write(JSON.stringify({ runs, files }));`;

async function runTool(program: string[], scenario: Scenario): Promise<Outcome> {
  const lines = ['cd @SCRATCH@ && mkdir -p out', ...(scenario.setup ?? [])];
  scenario.runs.forEach((args, index) => {
    lines.push(
      `${[...program, ...args].map(quote).join(' ')} > @SCRATCH@/stdout.${index} 2> @SCRATCH@/stderr.${index}; echo $? > @SCRATCH@/rc.${index}`,
    );
  });
  lines.push(`${quote(process.execPath)} -e ${quote(MANIFEST)} @SCRATCH@ ${scenario.runs.length}`);
  const files = Object.fromEntries(Object.entries(scenario.files).map(([path, content]) => [`@SCRATCH@/${path}`, content]));
  const result = await runClient(['sh', '-c', lines.join('\n')], { files, env: scenario.env ?? {}, timeoutMs: 120_000 });
  assert.equal(result.exitCode, 0, `${program.join(' ')} scenario did not complete:\n${result.stdout}\n${result.stderr}`);
  return JSON.parse(result.stdout) as Outcome;
}

/** Runs the scenario with both tools and asserts identical outcomes; returns the original's for further checks. */
async function sideBySide(scenario: Scenario): Promise<Outcome> {
  const [original, ours] = await Promise.all([runTool(ORIGINAL, scenario), runTool(OURS, scenario)]);
  assert.deepEqual(ours.runs, original.runs, 'exit codes and stdout differ');
  assert.deepEqual(ours.files, original.files, 'rendered files differ');
  return original;
}

const OUT = ['-o', '@SCRATCH@/out', '--fallback-metadata'];

test('mustache rendering: values, JSON coercion, sections, standalone lines, delimiters', { skip }, async () => {
  const templates: Record<string, string> = {
    'templates/plain': 'a={{a}} n={{n}} f={{f}} t={{t}} none=[{{none}}] missing=[{{missing}}] html={{html}} {{{html}}} {{&html}}\n',
    'templates/json': 'list={{list}}\ndict={{dict}}\nuni={{uni}} {{dict.inner}}\n',
    'templates/sections':
      '{{#list}}[{{.}}]{{/list}}\n{{#items}}\n- {{name}} {{outer}}\n{{/items}}\n{{^empty}}empty dict is false{{/empty}}\n{{#zero}}no{{/zero}}{{^zero}}0.0 is false{{/zero}}\n',
    'templates/dotted': '{{dict.inner.deep}}|{{list.0}}|{{#dict}}{{inner.deep}}{{a}}{{/dict}}|{{uni.length}}\n',
    'templates/whitespace': 'x\n  {{#t}}\n  in\n  {{/t}}\r\n{{! comment }}\n  {{#t}}  \nkept\n{{/t}}\n{{=<% %>=}}<% a %> {{a}}\n',
    'templates/deep/nested/dir/file.conf': '{{#items}}{{name}},{{/items}}',
    'templates/unclosed': 'before {{#t}} inside {{a}}',
  };
  const metadata = {
    a: 'A',
    n: 42,
    t: true,
    none: null,
    html: '<&>"',
    list: [1, 'two', null, 2.5],
    dict: { inner: { deep: 'D' }, '1': 'numeric key' },
    uni: 'é ü 😀',
    items: [{ name: 'first' }, { name: 'second', outer: 'shadow' }],
    outer: 'O',
    empty: {},
  };
  const text = JSON.stringify(metadata).replace('"n":42', '"n":42,"f":1.0,"zero":0.0,"big":1e16');
  await sideBySide({
    files: { ...templates, 'meta.json': text },
    runs: [['-t', '@SCRATCH@/templates', ...OUT, '-m', '@SCRATCH@/meta.json']],
  });
});

test('deep merge across OS_CONFIG_FILES and the fallback files, and --subhash', { skip }, async () => {
  const files = {
    'templates/merged': '{{a}}|{{b}}|{{c}}|{{list}}|{{fallback}}|{{deployments}}',
    'sub/templates/sub': '{{x}}|{{a}}',
    'fallback.json': '{"fallback": "fb", "a": {"from": "fallback"}, "deployments": [{"name": "old"}]}',
    'one.json': '{"a": {"x": 1, "y": {"z": 1}}, "b": [1, 2], "c": "one", "list": [1]}',
    'two.json': '{"a": {"y": {"w": 2}}, "b": {"now": "dict"}, "list": [2, 3], "deployments": [{"name": "new", "config": {"k": 1.50}}]}',
    'list.json': '[1]',
    'three.json': '{"c": {"three": true}, "a": {"x": null}}',
  };
  const env = { OS_CONFIG_FILES: '@SCRATCH@/one.json::@SCRATCH@/missing.json:@SCRATCH@/list.json:@SCRATCH@/two.json:@SCRATCH@/three.json' };
  await sideBySide({
    files,
    env,
    runs: [
      ['-t', '@SCRATCH@/templates', '-o', '@SCRATCH@/out', '--fallback-metadata', '@SCRATCH@/fallback.json'],
      ['-t', '@SCRATCH@/sub/templates', '-o', '@SCRATCH@/out', '--fallback-metadata', '-s', 'a'],
      ['-t', '@SCRATCH@/sub/templates', '-o', '@SCRATCH@/out', '--fallback-metadata', '-s', 'b'],
    ],
  });
});

test('control files and existing files: mode, owner, group, allow_empty', { skip }, async () => {
  const outcome = await sideBySide({
    files: {
      'templates/moded': 'x',
      'templates/moded.oac': 'mode: 0600\n',
      'templates/owned': 'y',
      'templates/owned.oac': '---\nowner: nobody\ngroup: 65534 # by id\nmode: 0640\n',
      'templates/kept': 'new body',
      'templates/gone': '{{missing}}',
      'templates/gone.oac': 'allow_empty: false\n',
      'templates/never': '',
      'templates/never.oac': 'allow_empty: no\n',
      'templates/emptyok': '',
      'templates/zero': 'z',
      'templates/zero.oac': 'mode: 0\n',
      'templates/run.sh': '#!/bin/sh\necho "argv: $#"\ncat\n',
      'out/kept': 'old and longer content',
      'out/gone': 'stale',
      'out/zero': 'z',
      'meta.json': '{"k": "v", "f": 1.0, "u": "\u00e9"}',
    },
    setup: ['chmod 0751 out/kept', 'chown 65534:65534 out/kept', 'chmod 0604 out/zero', 'chmod 0755 templates/run.sh'],
    runs: [['-t', '@SCRATCH@/templates', ...OUT, '-m', '@SCRATCH@/meta.json']],
  });
  assert.equal(outcome.files.kept?.mode, '751');
  assert.equal(outcome.files.owned?.uid, 65534);
  assert.ok(!('gone' in outcome.files) && !('never' in outcome.files), 'allow_empty: false deletes');
  assert.equal(
    outcome.files['run.sh']?.content,
    'argv: 0\n{"k": "v", "f": 1.0, "u": "\\u00e9"}',
    'the script read json.dumps of the metadata',
  );
});

test('an executable template that ignores its stdin (1 MiB of metadata) still renders', { skip }, async () => {
  const outcome = await sideBySide({
    files: { 'templates/quiet.sh': '#!/bin/sh\necho quiet\n', 'meta.json': JSON.stringify({ big: 'x'.repeat(1 << 20) }) },
    setup: ['chmod 0700 templates/quiet.sh'],
    runs: [['-t', '@SCRATCH@/templates', ...OUT, '-m', '@SCRATCH@/meta.json']],
  });
  assert.deepEqual(outcome.files['quiet.sh']?.content, 'quiet\n');
});

test('the shipped heat-agents templates render the same os-collect-config.conf and heat-config', { skip }, async () => {
  const metadata = {
    'os-collect-config': {
      collectors: ['ec2', 'heat', 'local'],
      polling_interval: 30,
      heat: {
        auth_url: 'http://127.0.0.1:5000/v3',
        user_id: 'u1',
        password: 'p@ss',
        project_id: 'proj',
        stack_id: 'stack/1234',
        resource_name: 'server',
        region_name: 'RegionOne',
      },
      cfn: { metadata_url: null, stack_name: null, secret_access_key: null, access_key_id: null, path: null },
      request: { metadata_url: 'http://127.0.0.1:8080/v1/AUTH_x/c/o?temp_url_sig=abc&temp_url_expires=1' },
    },
    deployments: [
      {
        id: 'a1b2',
        name: 'deploy-é',
        group: 'script',
        inputs: [
          { name: 'deploy_server_id', value: 'srv', type: 'String' },
          { name: 'ratio', value: 0.5, type: 'Number' },
        ],
        outputs: [],
        options: {},
        config: '#!/bin/sh\necho "hi <there>" & exit 0\n',
      },
    ],
  };
  const collectOnly = {
    'os-collect-config': {
      command: 'true',
      cachedir: '/tmp/c',
      splay: 5,
      collectors: ['zaqar'],
      zaqar: { use_websockets: true, queue_id: 'q' },
    },
  };
  const outcome = await sideBySide({
    files: { 'meta.json': JSON.stringify(metadata), 'collect.json': JSON.stringify(collectOnly), 'empty.json': '{}' },
    runs: [
      ['-t', SHIPPED_TEMPLATES, '-o', '@SCRATCH@/out', '--fallback-metadata', '-m', '@SCRATCH@/meta.json'],
      ['-t', SHIPPED_TEMPLATES, '-o', '@SCRATCH@/out/2', '--fallback-metadata', '-m', '@SCRATCH@/collect.json'],
      ['-t', SHIPPED_TEMPLATES, '-o', '@SCRATCH@/out/3', '--fallback-metadata', '-m', '@SCRATCH@/empty.json'],
    ],
  });
  assert.match(outcome.files['etc/os-collect-config.conf']?.content ?? '', /\[heat\]\nauth_url = http:\/\/127\.0\.0\.1:5000\/v3\n/);
  assert.match(outcome.files['var/run/heat-config/heat-config']?.content ?? '', /^\[\{"id": "a1b2", "name": "deploy-\\u00e9"/);
});

test('--key, --type, --key-default and --boolean-key print and exit alike', { skip }, async () => {
  const meta = JSON.stringify({
    s: 'word',
    dash: 'a-b',
    nl: 'line\n',
    i: 7,
    f: 1.0,
    t: true,
    no: false,
    nul: null,
    dsn: 'mysql://u:p@host/db?charset=utf8',
    ip: '192.0.2.1/24',
    swift: 'r1z1-10.0.0.1:%PORT%/sda,r1z2-10.0.0.2:%PORT%/sdb',
    list: [{ name: 'x' }, 'y'],
    dict: { k: [1, 2] },
  });
  const key = (...args: string[]) => ['--fallback-metadata', '-m', '@SCRATCH@/meta.json', ...args];
  const outcome = await sideBySide({
    files: { 'meta.json': meta },
    runs: [
      key('--key', 's'),
      key('--key', 'dash'),
      key('--key', 'dash', '--type', 'username'),
      key('--key', 'nl'),
      key('--key', 'i', '--type', 'int'),
      key('--key', 'f'),
      key('--key', 'f', '--type', 'netaddress'),
      key('--key', 't'),
      key('--key', 't', '--type', 'int'),
      key('--key', 'nul'),
      key('--key', 'nul', '--key-default', 'dflt'),
      key('--key', 'missing', '--key-default', ''),
      key('--key', 'missing', '--type', 'int', '--key-default', 'not an int'),
      key('--key', 'dsn', '--type', 'dsn'),
      key('--key', 'ip', '--type', 'netaddress'),
      key('--key', 'swift', '--type', 'swiftdevices'),
      key('--key', 'list.0.name'),
      key('--key', 'list.-1'),
      key('--key', 'list.5', '--key-default', 'none'),
      key('--key', 'dict'),
      key('--key', 'dict', '--type', 'raw'),
      key('--key', 'dict.k.1', '--type', 'int'),
      key('--key', 's', '--type', 'nosuchtype'),
      key('--boolean-key', 't'),
      key('--boolean-key', 'no'),
      key('--boolean-key', 's'),
      key('--boolean-key', 'missing'),
      key('--key', 's', '--boolean-key', 'no'),
      key('-m', '@SCRATCH@/meta.json', '-m', '@SCRATCH@/nope.json', '--key', 's', '--key-default', 'last -m wins'),
    ],
  });
  assert.deepEqual(
    outcome.runs.slice(0, 3).map((run) => [run.exitCode, run.stdout]),
    [
      [0, 'word\n'],
      [1, ''],
      [0, 'a-b\n'],
    ],
  );
});

test('failures: bad metadata, bad templates, failing scripts and bad control files write nothing and exit alike', { skip }, async () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['invalid json', { 'templates/a': '{{a}}', 'meta.json': '{"a": ' }],
    ['section mismatch', { 'templates/a': 'ok', 'templates/b': '{{#a}}x{{/b}}', 'meta.json': '{"a": 1}' }],
    ['failing script', { 'templates/a': 'ok', 'templates/b.sh': '#!/bin/sh\necho nope\nexit 4\n', 'meta.json': '{}' }],
    ['unknown control key', { 'templates/a': 'ok', 'templates/a.oac': 'colour: red\n', 'meta.json': '{}' }],
    ['mode out of range', { 'templates/a': 'ok', 'templates/a.oac': 'mode: 777\n', 'meta.json': '{}' }],
    ['unknown owner', { 'templates/a': 'ok', 'templates/a.oac': 'owner: no-such-user-hearth\n', 'meta.json': '{}' }],
    ['allow_empty not a bool', { 'templates/a': 'ok', 'templates/a.oac': 'allow_empty: 1\n', 'meta.json': '{}' }],
  ];
  for (const [name, files] of cases) {
    const outcome = await sideBySide({
      files,
      setup: ['[ -e templates/b.sh ] && chmod 0755 templates/b.sh; true'],
      runs: [
        ['-t', '@SCRATCH@/templates', ...OUT, '-m', '@SCRATCH@/meta.json'],
        ['-t', '@SCRATCH@/templates', ...OUT, '-m', '@SCRATCH@/meta.json', '--validate'],
      ],
    });
    assert.deepEqual(
      outcome.runs.map((run) => run.exitCode),
      [1, 1],
      name,
    );
    assert.deepEqual(outcome.files, {}, `${name}: nothing written`);
  }
  const usage = await sideBySide({
    files: { 'meta.json': '{"sub": 1}' },
    runs: [
      ['--no-such-flag'],
      ['--fallback-metadata', '-m', '@SCRATCH@/meta.json', '-s', 'sub'],
      ['-t', '/some/where', '--print-templates'],
    ],
  });
  assert.deepEqual(
    usage.runs.map((run) => run.exitCode),
    [2, 1, 0],
  );
});
