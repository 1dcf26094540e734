// The multi-call bundle as a process: built once (without the single executable) into a temp dir.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
const COMMANDS = [
  'os-collect-config',
  'os-refresh-config',
  'os-apply-config',
  'heat-config',
  'heat-config-notify',
  'cfn-init',
  'cfn-signal',
  'cfn-hup',
  'cfn-get-metadata',
];
let dir = '';
let bundle = '';

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-agent-build-'));
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build-agent.mjs'), '--out', dir, '--no-sea'], { encoding: 'utf8' });
  assert.equal(built.status, 0, built.stderr);
  bundle = join(dir, 'hearth-agent.cjs');
});
after(() => rmSync(dir, { recursive: true, force: true }));

function agent(path: string, args: string[], input?: string, env: NodeJS.ProcessEnv = {}) {
  const clean = { ...process.env, ...env };
  delete clean.NODE_EXTRA_CA_CERTS;
  return spawnSync(path, args, { encoding: 'utf8', input, env: clean, timeout: 20_000 });
}

test('--version and --help list every command and hook; no argument is a usage error', () => {
  const version = agent(bundle, ['--version']);
  assert.equal(version.status, 0, version.stderr);
  assert.match(version.stdout, /^hearth-agent \d+\.\d+\.\d+/);
  for (const name of COMMANDS) assert.match(version.stdout, new RegExp(`\\b${name}\\b`));
  const help = agent(bundle, ['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /hooks: .*\bscript\b/);
  assert.match(help.stdout, /built in: clean install hook/);
  const none = agent(bundle, []);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /usage: hearth-agent/);
});

test('dispatches on the first argument and on the name it is called by, and runs only that command', () => {
  const byArgument = agent(bundle, ['os-refresh-config', '--print-phases']);
  assert.equal(byArgument.status, 0, byArgument.stderr);
  assert.equal(byArgument.stdout, 'pre-configure\tconfigure\tpost-configure\tmigration\n');
  const links = join(dir, 'links');
  mkdirSync(links, { recursive: true });
  symlinkSync(bundle, join(links, 'os-refresh-config'));
  const byName = agent(join(links, 'os-refresh-config'), ['--print-phases']);
  assert.equal(byName.stdout, byArgument.stdout);
  // cfn-signal with no URL is its own usage error, not hearth-agent's.
  const signal = agent(bundle, ['cfn-signal']);
  assert.notEqual(signal.status, 0);
  assert.doesNotMatch(signal.stderr, /hearth-agent/);
  assert.match(signal.stderr + signal.stdout, /usage: cfn-signal/);
});

test('unknown commands, names and hook groups exit 2 and say what this build has', () => {
  const unknown = agent(bundle, ['cfn-frobnicate']);
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /unknown command "cfn-frobnicate"/);
  const hook = agent(bundle, ['hook', 'nosuch']);
  assert.equal(hook.status, 2);
  assert.match(hook.stderr, /no hook group "nosuch"; this build has: .*script/);
  symlinkSync(bundle, join(dir, 'not-an-agent'));
  const badName = agent(join(dir, 'not-an-agent'), ['--help']);
  assert.equal(badName.status, 2);
  assert.match(badName.stderr, /called as "not-an-agent"/);
  // A renamed (versioned) copy is still hearth-agent itself.
  symlinkSync(bundle, join(dir, 'hearth-agent-0.1'));
  const versioned = agent(join(dir, 'hearth-agent-0.1'), ['--version']);
  assert.equal(versioned.status, 0, versioned.stderr);
  assert.match(versioned.stdout, /^hearth-agent /);
});

test('hook GROUP runs the hook on a deployment from stdin', () => {
  const work = join(dir, 'hook-work');
  const deployment = {
    id: 'd1',
    name: 'd1',
    group: 'script',
    config: '#!/bin/sh\necho "hello $who"\nprintf 42 > "$heat_outputs_path.answer"\n',
    inputs: [{ name: 'who', value: 'guest' }],
    outputs: [{ name: 'answer' }],
    options: {},
  };
  const result = agent(bundle, ['hook', 'script'], JSON.stringify(deployment), {
    HEARTH_ROOT: work,
    HEAT_SCRIPT_WORKING: join(work, 'w'),
    HEAT_SCRIPT_OUTPUTS: join(work, 'o'),
  });
  assert.equal(result.status, 0, result.stderr);
  const out = JSON.parse(result.stdout);
  assert.equal(out.deploy_status_code, 0);
  assert.equal(out.deploy_stdout, 'hello guest\n');
  assert.equal(out.answer, '42');
});

test('install --root links every command to the agent and writes executable hook launchers', () => {
  const rootfs = join(dir, 'rootfs');
  const result = agent(bundle, ['install', '--root', rootfs, '--agent', '/usr/bin/hearth-agent']);
  assert.equal(result.status, 0, result.stderr);
  for (const name of COMMANDS) assert.equal(readlinkSync(join(rootfs, 'usr/bin', name)), '/usr/bin/hearth-agent');
  const launcher = join(rootfs, 'var/lib/heat-config/hooks/script');
  assert.equal(statSync(launcher).mode & 0o777, 0o755);
  assert.match(readFileSync(launcher, 'utf8'), /^#!\/bin\/sh\n[^]*exec '\/usr\/bin\/hearth-agent' hook script "\$@"\n$/);
  // Run again with another prefix: its links and launchers are replaced, not doubled.
  const again = agent(bundle, ['install', '--root', rootfs, '--prefix', '/usr/local']);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(readlinkSync(join(rootfs, 'usr/local/bin/cfn-signal')), '/usr/local/bin/hearth-agent');
  assert.match(readFileSync(launcher, 'utf8'), /exec '\/usr\/local\/bin\/hearth-agent' hook script/);
  const bad = agent(bundle, ['install', '--root']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /usage: hearth-agent install/);
});

test("install --agent with a space, a quote and a $ in its path writes launchers that run that agent's hook", () => {
  // The agent where such a path points: a real copy of the bundle.
  const odd = join(dir, "odd dir's $HOME");
  mkdirSync(odd, { recursive: true });
  copyFileSync(bundle, join(odd, 'hearth-agent'));
  chmodSync(join(odd, 'hearth-agent'), 0o755);
  const rootfs = join(dir, 'rootfs-odd');
  const result = agent(bundle, ['install', '--root', rootfs, '--agent', join(odd, 'hearth-agent')]);
  assert.equal(result.status, 0, result.stderr);
  const work = join(dir, 'odd-work');
  const deployment = { id: 'd2', name: 'd2', group: 'script', config: '#!/bin/sh\necho launched\n', inputs: [], outputs: [], options: {} };
  const hook = agent(join(rootfs, 'var/lib/heat-config/hooks/script'), [], JSON.stringify(deployment), {
    HEARTH_ROOT: work,
    HEAT_SCRIPT_WORKING: join(work, 'w'),
    HEAT_SCRIPT_OUTPUTS: join(work, 'o'),
  });
  assert.equal(hook.status, 0, hook.stderr);
  assert.equal(JSON.parse(hook.stdout).deploy_stdout, 'launched\n');
});

test('on a Node.js older than the agents are built for (a distribution node 18), every command refuses to start, saying why', () => {
  const preload = join(dir, 'old-node.cjs');
  writeFileSync(preload, "Object.defineProperty(process.versions, 'node', { value: '18.19.0' });\n");
  for (const args of [['cfn-signal', '--help'], ['--version']]) {
    const run = spawnSync(process.execPath, ['--require', preload, bundle, ...args], { encoding: 'utf8' });
    assert.equal(run.status, 1, `${args.join(' ')}: ${run.stderr}`);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /hearth-agent needs Node\.js 20\.19 or newer, and .* is 18\.19\.0: install a newer node/);
  }
  // The node it was built with runs it.
  assert.equal(spawnSync(process.execPath, [bundle, '--version'], { encoding: 'utf8' }).status, 0);
});
