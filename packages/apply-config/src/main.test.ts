import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@hearth/agent-kit';
import { applyConfig } from './main.ts';
import { parseOptions } from './options.ts';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'os-apply-config.js');
/** The templates the images ship (heat-agents' heat-config element's, with their 0600 .oac files). */
const SHIPPED = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../../images/elements/hearth-agent/static/usr/libexec/os-apply-config/templates',
);

function workspace(templates: Record<string, string>, metadata: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'apply-config-main-'));
  for (const [path, text] of Object.entries(templates)) {
    mkdirSync(dirname(join(root, 'templates', path)), { recursive: true });
    writeFileSync(join(root, 'templates', path), text);
  }
  for (const [name, text] of Object.entries(metadata)) writeFileSync(join(root, name), text);
  mkdirSync(join(root, 'out'), { recursive: true });
  return root;
}

function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const stdout = new PassThrough();
  const logs = new PassThrough();
  let printed = '';
  let logged = '';
  stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  logs.on('data', (chunk: Buffer) => (logged += chunk.toString()));
  const code = applyConfig(parseOptions(['--fallback-metadata', ...argv], env), {
    stdout,
    log: createLogger({ name: 'os-apply-config', stream: logs }),
    env,
  });
  return { code, stdout: printed, logs: logged };
}

test('renders every template to the same path under the output root, with the control file mode', () => {
  const root = workspace(
    { 'etc/app.conf': 'name={{app.name}}\nport={{app.port}}\n', 'etc/app.conf.oac': 'mode: 0640\n', 'var/run/x/list': '{{app.list}}' },
    { 'a.json': '{"app": {"name": "one", "port": 80, "list": [1]}}', 'b.json': '{"app": {"name": "two"}}' },
  );
  const result = run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'a.json'), join(root, 'b.json')]);
  assert.equal(result.code, 0, result.logs);
  assert.equal(readFileSync(join(root, 'out/etc/app.conf'), 'utf8'), 'name=two\nport=80\n');
  assert.equal(statSync(join(root, 'out/etc/app.conf')).mode & 0o777, 0o640);
  assert.equal(readFileSync(join(root, 'out/var/run/x/list'), 'utf8'), '[1]');
  assert.equal(statSync(join(root, 'out/var/run/x/list')).mode & 0o777, 0o644);
  assert.match(result.logs, /"msg":"success"/);
  assert.ok(!existsSync(join(root, 'out/etc/app.conf.oac')));
});

test('an existing file keeps its mode; allow_empty false deletes an empty result', () => {
  const root = workspace(
    { keep: 'v={{v}}', gone: '{{missing}}', 'gone.oac': 'allow_empty: false\n', never: '', 'never.oac': 'allow_empty: false' },
    { 'm.json': '{"v": 2}' },
  );
  writeFileSync(join(root, 'out/keep'), 'old and longer content');
  chmodSync(join(root, 'out/keep'), 0o600);
  writeFileSync(join(root, 'out/gone'), 'old');
  const result = run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json')]);
  assert.equal(result.code, 0, result.logs);
  assert.equal(readFileSync(join(root, 'out/keep'), 'utf8'), 'v=2');
  assert.equal(statSync(join(root, 'out/keep')).mode & 0o777, 0o600);
  assert.ok(!existsSync(join(root, 'out/gone')));
  assert.ok(!existsSync(join(root, 'out/never')));
  assert.match(result.logs, /deleting .*gone/);
  assert.match(result.logs, /not creating empty .*never/);
});

test('a symlink to a directory under the templates is not entered (as os.walk), even one that loops', () => {
  const root = workspace({ 'etc/app.conf': 'v={{v}}', 'elsewhere/other.conf': 'other' }, { 'm.json': '{"v": 1}' });
  const templates = join(root, 'templates/etc');
  symlinkSync('../elsewhere', join(templates, 'linked'));
  symlinkSync('..', join(templates, 'loop'));
  writeFileSync(join(root, 'file'), 'via a file symlink {{v}}');
  symlinkSync(join(root, 'file'), join(templates, 'file-link'));
  const result = run(['-t', templates, '-o', join(root, 'out'), '-m', join(root, 'm.json')]);
  assert.equal(result.code, 0, result.logs);
  assert.deepEqual(readdirSync(join(root, 'out')).sort(), ['app.conf', 'file-link']);
  assert.equal(readFileSync(join(root, 'out/file-link'), 'utf8'), 'via a file symlink 1');
});

test('a .oac that is not a file (here a directory) is ignored, as the original checks os.path.isfile', () => {
  const root = workspace({ a: 'a', b: 'b', 'b.oac': 'mode: 0600\n' }, { 'm.json': '{}' });
  mkdirSync(join(root, 'templates/a.oac'));
  const result = run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json')]);
  assert.equal(result.code, 0, result.logs);
  assert.equal(statSync(join(root, 'out/a')).mode & 0o777, 0o644);
  assert.equal(statSync(join(root, 'out/b')).mode & 0o777, 0o600);
});

test('templates and control files read as Python text files: CRLF and CR become LF, a template BOM is kept', () => {
  const root = workspace(
    {
      'crlf.conf': '[s]\r\n{{#on}}\r\nkey = {{v}}\r\n{{/on}}\r\nold-mac\rend\r\n',
      'bom.conf': '\uFEFFv={{v}}\n',
      'bom.conf.oac': '\uFEFFmode: 0600\r\nallow_empty: true\r\n',
      script: '#!/bin/sh\nprintf "\\357\\273\\277x\\r\\n"\n',
    },
    { 'm.json': '{"on": true, "v": 1}' },
  );
  chmodSync(join(root, 'templates/script'), 0o755);
  const result = run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json')]);
  assert.equal(result.code, 0, result.logs);
  assert.equal(readFileSync(join(root, 'out/crlf.conf'), 'utf8'), '[s]\nkey = 1\nold-mac\nend\n');
  assert.equal(readFileSync(join(root, 'out/bom.conf'), 'utf8'), '\uFEFFv=1\n');
  assert.equal(statSync(join(root, 'out/bom.conf')).mode & 0o777, 0o600);
  assert.equal(readFileSync(join(root, 'out/script'), 'utf8'), '\uFEFFx\r\n', "a script's output is taken as it is");
});

test('executable templates get the metadata as JSON on stdin; a failing one aborts before anything is written', () => {
  const root = workspace({ 'a-first': 'x', 'script.sh': '#!/bin/sh\ncat; echo\n' }, { 'm.json': '{"b": 1.0, "a": "é"}' });
  chmodSync(join(root, 'templates/script.sh'), 0o755);
  assert.equal(run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json')]).code, 0);
  assert.equal(readFileSync(join(root, 'out/script.sh'), 'utf8'), '{"b": 1.0, "a": "\\u00e9"}\n');
  writeFileSync(join(root, 'm.json'), JSON.stringify({ big: 'x'.repeat(1 << 20) }));
  writeFileSync(join(root, 'templates/script.sh'), '#!/bin/sh\necho ignores stdin\n');
  assert.equal(run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json')]).code, 0);
  assert.equal(readFileSync(join(root, 'out/script.sh'), 'utf8'), 'ignores stdin\n');
  writeFileSync(join(root, 'templates/script.sh'), '#!/bin/sh\necho broken; exit 3\n');
  const out2 = join(root, 'out2');
  const failed = run(['-t', join(root, 'templates'), '-o', out2, '-m', join(root, 'm.json')]);
  assert.equal(failed.code, 1);
  assert.match(failed.logs, /config script failed: .*script.sh \(exit 3\).*broken/s);
  assert.ok(!existsSync(join(out2, 'a-first')), 'nothing is written when one template fails');
});

test('with -t . an executable template is run from the template dir, never looked up on PATH', () => {
  const root = workspace({ hostname: '#!/bin/sh\necho from the template\n' }, { 'm.json': '{}' });
  chmodSync(join(root, 'templates/hostname'), 0o755);
  const env = { ...process.env, HEARTH_APPLY_CONFIG_LOG_FILE: join(root, 'log') };
  const argv = [BIN, '--fallback-metadata', '-t', '.', '-o', join(root, 'out'), '-m', join(root, 'm.json')];
  const result = spawnSync(process.execPath, argv, { cwd: join(root, 'templates'), env, encoding: 'utf8', timeout: 30_000 });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(readFileSync(join(root, 'out/hostname'), 'utf8'), 'from the template\n');
});

test('--validate renders and writes nothing; a template error is exit 1', () => {
  const root = workspace({ ok: '{{a}}', bad: '{{#a}}x{{/b}}' }, { 'm.json': '{"a": 1}' });
  const result = run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json'), '--validate']);
  assert.equal(result.code, 1);
  assert.match(result.logs, /could not render moustache template .*bad: Section end tag mismatch/);
  writeFileSync(join(root, 'templates/bad'), 'fine');
  assert.equal(run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json'), '-v']).code, 0);
  assert.ok(!existsSync(join(root, 'out/ok')));
});

test('metadata list precedence: -m, then OS_CONFIG_FILES, then --os-config-files, then the legacy list', () => {
  const root = workspace({}, { 'a.json': '{"k": "a"}', 'b.json': '{"k": "b"}', 'c.json': '{"k": "c"}', 'd.json': '{"k": "d"}' });
  writeFileSync(join(root, 'list.json'), JSON.stringify([join(root, 'c.json')]));
  writeFileSync(join(root, 'empty.json'), '[]');
  mkdirSync(join(root, 'var/run/os-collect-config'), { recursive: true });
  writeFileSync(join(root, 'var/run/os-collect-config/os_config_files.json'), JSON.stringify([join(root, 'd.json')]));
  const key = (argv: string[], env: NodeJS.ProcessEnv) => run(['--key', 'k', ...argv], env);
  assert.equal(key(['-m', join(root, 'a.json')], { OS_CONFIG_FILES: join(root, 'b.json') }).stdout, 'a\n');
  assert.equal(key([], { OS_CONFIG_FILES: `${join(root, 'a.json')}:${join(root, 'b.json')}` }).stdout, 'b\n');
  assert.equal(key(['--os-config-files', join(root, 'list.json')], {}).stdout, 'c\n');
  const legacy = key([], { OS_CONFIG_FILES_PATH: join(root, 'empty.json'), HEARTH_ROOT: root });
  assert.equal(legacy.stdout, 'd\n');
  assert.match(legacy.logs, /DEPRECATED: falling back to .*os_config_files.json/);
  const explicit = key(['--os-config-files', join(root, 'empty.json')], { HEARTH_ROOT: root });
  assert.equal(explicit.code, 1, 'an explicit empty list does not fall back');
  assert.match(explicit.logs, /key k does not exist in \[\]/);
});

test('--subhash, --print-templates, --boolean-key', () => {
  const root = workspace({ f: '{{x}}' }, { 'm.json': '{"sub": {"x": "inner"}, "x": "outer", "t": true, "f": false, "s": "true"}' });
  assert.equal(run(['-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json'), '-s', 'sub']).code, 0);
  assert.equal(readFileSync(join(root, 'out/f'), 'utf8'), 'inner');
  assert.equal(run(['-m', join(root, 'm.json'), '-s', 'x']).code, 1);
  assert.equal(run(['-t', '/somewhere', '--print-templates']).stdout, '/somewhere\n');
  const bool = (key: string) => run(['-m', join(root, 'm.json'), '--boolean-key', key]).code;
  assert.deepEqual([bool('t'), bool('f'), bool('s'), bool('none')], [0, 1, 255, 255]);
  const both = run(['-m', join(root, 'm.json'), '--boolean-key', 'f', '--key', 'x']);
  assert.deepEqual([both.code, both.stdout], [0, 'outer\n']);
  assert.match(both.logs, /--boolean-key ignored/);
});

test('the shipped heat-agents templates render os-collect-config.conf and the heat-config deployments list', () => {
  const root = workspace(
    {},
    {
      'm.json': JSON.stringify({
        'os-collect-config': {
          collectors: ['ec2', 'heat', 'local'],
          polling_interval: 30,
          heat: {
            auth_url: 'http://127.0.0.1:5000/v3',
            user_id: 'u',
            password: 'p',
            project_id: 'pr',
            stack_id: 's/1',
            resource_name: 'server',
          },
          cfn: { metadata_url: null, stack_name: null, secret_access_key: null, access_key_id: null, path: null },
        },
        deployments: [{ id: 'd1', name: 'one', group: 'script', inputs: [], config: 'echo hi' }],
      }),
    },
  );
  const result = run(['-t', SHIPPED, '-o', join(root, 'out'), '-m', join(root, 'm.json')]);
  assert.equal(result.code, 0, result.logs);
  assert.equal(
    readFileSync(join(root, 'out/etc/os-collect-config.conf'), 'utf8'),
    [
      '[DEFAULT]',
      'command = os-refresh-config',
      'polling_interval = 30',
      'collectors = ec2',
      'collectors = heat',
      'collectors = local',
      '',
      '[cfn]',
      'metadata_url = ',
      'stack_name = ',
      'secret_access_key = ',
      'access_key_id = ',
      'path = ',
      '',
      '[heat]',
      'auth_url = http://127.0.0.1:5000/v3',
      'user_id = u',
      'password = p',
      'project_id = pr',
      'stack_id = s/1',
      'resource_name = server',
      '',
    ].join('\n'),
  );
  assert.equal(
    readFileSync(join(root, 'out/var/run/heat-config/heat-config'), 'utf8'),
    '[{"id": "d1", "name": "one", "group": "script", "inputs": [], "config": "echo hi"}]',
  );
});

test('the bin: --help and exit codes (0, 1, 2, 255)', () => {
  const root = workspace({}, { 'm.json': '{"n": 1}' });
  const env = { ...process.env, HEARTH_APPLY_CONFIG_LOG_FILE: join(root, 'log'), OS_CONFIG_FILES: join(root, 'm.json') };
  const bin = (...argv: string[]) => spawnSync(process.execPath, [BIN, '--fallback-metadata', ...argv], { env, encoding: 'utf8' });
  const help = bin('--help');
  assert.equal(help.status, 0);
  assert.match(help.stdout, /usage: os-apply-config/);
  assert.equal(bin('--key', 'n', '--type', 'int').stdout, '1\n');
  assert.equal(bin('--key', 'missing').status, 1);
  assert.equal(bin('--wat').status, 2);
  assert.equal(bin('--boolean-key', 'n').status, 255);
});

test("--version prints the version of the os-apply-config it stands in for, marked as hearth's, as the original prints its own", () => {
  const bin = new URL('./bin.ts', import.meta.url).pathname;
  const ours = spawnSync(process.execPath, ['--import', 'tsx', bin, '--version'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(ours.status, 0, ours.stderr);
  assert.equal(ours.stdout, '12.0.0+hearth\n');
  // Debian's by its path: under npm, os-apply-config on PATH is this package's own bin.
  if (existsSync('/usr/bin/os-apply-config')) {
    const debian = spawnSync('/usr/bin/os-apply-config', ['--version'], { encoding: 'utf8', timeout: 30_000 });
    assert.match(debian.stdout, /^12\.0\.0\n$/, 'the Debian version hearth names');
  }
});

test('started with umask 000, the directories it creates and its log are not writable by others (the original made them 0777 / 0666)', () => {
  const root = workspace(
    { 'var/run/heat-config/heat-config': '{{deployments}}', 'var/run/heat-config/heat-config.oac': 'mode: 0600\n' },
    {
      'm.json': '{"deployments": []}',
    },
  );
  const log = join(root, 'logs', 'os-apply-config.log');
  const env = { ...process.env, HEARTH_APPLY_CONFIG_LOG_FILE: log };
  const argv = [BIN, '--fallback-metadata', '-t', join(root, 'templates'), '-o', join(root, 'out'), '-m', join(root, 'm.json')];
  const script = `umask 000; exec "$0" "$@"`;
  const result = spawnSync('sh', ['-c', script, process.execPath, ...argv], { env, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  for (const dir of ['out/var', 'out/var/run', 'out/var/run/heat-config']) assert.equal(statSync(join(root, dir)).mode & 0o777, 0o755, dir);
  assert.equal(statSync(join(root, 'out/var/run/heat-config/heat-config')).mode & 0o777, 0o600);
  if (process.geteuid?.() === 0) {
    assert.equal(statSync(join(root, 'logs')).mode & 0o777, 0o755);
    assert.equal(statSync(log).mode & 0o777, 0o644);
  }
});
